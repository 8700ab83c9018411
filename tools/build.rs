//! Compiles `proto/cuzk/v1/proving.proto` for the `serve` feature with protox, a
//! protobuf compiler written in Rust: building needs no system `protoc`.
fn main() {
    println!("cargo:rerun-if-changed=proto/cuzk/v1/proving.proto");
    #[cfg(feature = "serve")]
    compile_proto();
}

#[cfg(feature = "serve")]
fn compile_proto() {
    let fds = match protox::compile(["cuzk/v1/proving.proto"], ["proto"]) {
        Ok(fds) => fds,
        Err(e) => panic!("compiling proto/cuzk/v1/proving.proto: {e}"),
    };
    if let Err(e) = tonic_build::configure().build_client(true).build_server(true).compile_fds(fds) {
        panic!("generating Rust for proving.proto: {e}");
    }
}
