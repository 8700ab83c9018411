//! The daemon's message limit, as Curio's client needs it: a request up to
//! `daemon.message_bytes_max` (256 MiB by default, as cuzk's Go client allows) reaches the
//! daemon and is judged on its content; a larger one is refused by status, and the daemon
//! goes on serving.

mod common;

use arenaprove_tools::serve::pb::proving_engine_client::ProvingEngineClient;
use arenaprove_tools::serve::pb::*;
use arenaprove_tools::serve::{start, Overrides, ServeConfig};
use common::{params_2kib, porep, sealed, PARAM_CACHE};
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_up_to_256_mib_are_read_and_larger_ones_refused() {
    params_2kib();
    let sector = sealed(71);
    let toml = format!(
        "[daemon]\nlisten = [\"127.0.0.1:0\"]\n[srs]\nparam_cache = \"{PARAM_CACHE}\"\npreload = [\"porep-2k\"]\n\
         [engine]\nslots = 1\nsynth_workers = 1\n"
    );
    let config = ServeConfig::from_toml(&toml, &Overrides::default()).unwrap();
    assert_eq!(config.message_bytes_max, 256 << 20);
    let running = start(config).await.expect("daemon starts");
    let mut c = ProvingEngineClient::connect(format!("http://{}", running.tcp[0]))
        .await
        .unwrap()
        .max_encoding_message_size(usize::MAX)
        .max_decoding_message_size(usize::MAX);

    // 200 MiB of payload (a large Curio request): read whole, refused for what it holds.
    let mut big = porep("big", &sector, Priority::Normal);
    big.vanilla_proof = vec![b'{'; 200 << 20];
    let status = c.submit_proof(big).await.expect_err("a malformed payload is refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{}", status.message());

    // Past the limit: refused by the transport's limit, with a status.
    let mut huge = porep("huge", &sector, Priority::Normal);
    huge.vanilla_proof = vec![0u8; (256 << 20) + 1];
    let status = c.submit_proof(huge).await.expect_err("over the limit");
    assert_eq!(status.code(), Code::OutOfRange, "{}", status.message());

    // And the daemon still serves.
    let s = c.get_status(GetStatusRequest {}).await.expect("status after the refusals").into_inner();
    assert!(s.queues.iter().all(|q| q.pending == 0 && q.in_progress == 0), "{s:?}");
}
