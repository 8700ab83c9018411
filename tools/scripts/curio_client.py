#!/usr/bin/env python3
"""Drive `arenaprove serve` with a client generated from *Curio's own* proving.proto.

Shows that the daemon is wire-compatible with cuzk: the stubs come from Curio's
extern/cuzk/cuzk-proto/proto/cuzk/v1/proving.proto (pass its path), not from arenaprove's
copy. The request is built the way Curio's PoRepSnarkCuzk builds it (lib/ffi/cuzk_funcs.go):
the C1 output wrapped in {"SectorNum", "Phase1Out" (base64), "SectorSize"}.

    python3 -m venv .venv && .venv/bin/pip install grpcio grpcio-tools
    arenaprove filecoin seal --sector-size 2KiB --out /tmp/s          # c1.json, sector.json
    arenaprove serve --listen 127.0.0.1:9820 &
    .venv/bin/python tools/scripts/curio_client.py --proto CURIO/extern/cuzk/cuzk-proto/proto/cuzk/v1/proving.proto \
        --addr 127.0.0.1:9820 --c1 /tmp/s/c1.json --sector /tmp/s/sector.json --proof-out /tmp/s/proof \
        --compare-with tools/proto/cuzk/v1/proving.proto
    arenaprove filecoin verify --c1 /tmp/s/c1.json --sector /tmp/s/sector.json --proof /tmp/s/proof

It submits (SubmitProof), submits again with the same request id (same job), awaits with a
short timeout (TIMEOUT while it proves), awaits to the end (AwaitProof), writes the proof
bytes (fetch), and prints GetStatus and the timing fields. Exit 0 only when the proof came
back COMPLETED.
"""
import argparse
import base64
import importlib
import json
import os
import sys
import tempfile
import time


def generate_stubs(proto_path):
    """protoc (grpcio-tools) on Curio's proto into a temporary package; returns (pb2, pb2_grpc)."""
    from grpc_tools import protoc

    proto_path = os.path.abspath(proto_path)
    # The proto's own directory layout is cuzk/v1/proving.proto: its root is three levels up.
    root = os.path.dirname(os.path.dirname(os.path.dirname(proto_path)))
    rel = os.path.relpath(proto_path, root)
    out = tempfile.mkdtemp(prefix="curio-stubs-")
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    rc = protoc.main(["protoc", f"-I{root}", f"-I{include}", f"--python_out={out}", f"--grpc_python_out={out}", rel])
    if rc != 0:
        sys.exit(f"protoc failed on {proto_path} (exit {rc})")
    sys.path.insert(0, out)
    module = rel[: -len(".proto")].replace("/", ".")
    return importlib.import_module(module + "_pb2"), importlib.import_module(module + "_pb2_grpc")


def descriptor(proto_path):
    """The compiled FileDescriptorProto of a proving.proto, without comments and positions."""
    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc

    proto_path = os.path.abspath(proto_path)
    root = os.path.dirname(os.path.dirname(os.path.dirname(proto_path)))
    out = os.path.join(tempfile.mkdtemp(prefix="fds-"), "fds.pb")
    if protoc.main(["protoc", f"-I{root}", f"--descriptor_set_out={out}", os.path.relpath(proto_path, root)]) != 0:
        sys.exit(f"protoc failed on {proto_path}")
    fds = descriptor_pb2.FileDescriptorSet()
    with open(out, "rb") as f:
        fds.ParseFromString(f.read())
    fd = fds.file[0]
    fd.ClearField("source_code_info")
    return fd.SerializeToString(deterministic=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--proto", required=True, help="Curio's extern/cuzk/cuzk-proto/proto/cuzk/v1/proving.proto")
    ap.add_argument("--addr", default="127.0.0.1:9820", help="host:port or unix:///path")
    ap.add_argument("--c1", required=True, help="c1.json (filecoin-proofs-api SealCommitPhase1Output JSON)")
    ap.add_argument("--sector", required=True, help="sector.json from `arenaprove filecoin seal`")
    ap.add_argument("--proof-out", required=True, help="where to write the proof bytes")
    ap.add_argument("--miner", type=int, default=1000)
    ap.add_argument("--compare-with", help="arenaprove's tools/proto/cuzk/v1/proving.proto: check that both "
                    "compile to the same descriptor (names, numbers, types) before calling")
    args = ap.parse_args()
    if args.compare_with:
        same = descriptor(args.proto) == descriptor(args.compare_with)
        print(f"descriptors of {args.proto} and {args.compare_with}: {'identical' if same else 'DIFFERENT'}")
        if not same:
            sys.exit(1)

    import grpc

    pb2, pb2_grpc = generate_stubs(args.proto)
    c1 = open(args.c1, "rb").read()
    sector = json.load(open(args.sector))
    registered = json.loads(c1)["registered_proof"]
    # go-state-types' numbering of RegisteredSealProof: 5 sizes per family.
    sizes = ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"]
    families = ["V1", "V1_1", "V1_1_Feat_SyntheticPoRep", "V1_2_Feat_NonInteractivePoRep"]
    names = [f"StackedDrg{s}{f}" for f in families for s in sizes]
    proof_id = names.index(registered)

    envelope = json.dumps({
        "SectorNum": sector["sector_id"],
        "Phase1Out": base64.b64encode(c1).decode(),
        "SectorSize": sector["sector_size"],
    }).encode()
    request = pb2.SubmitProofRequest(
        request_id=f"porep-{args.miner}-{sector['sector_id']}",
        proof_kind=pb2.POREP_SEAL_COMMIT,
        sector_size=sector["sector_size"],
        registered_proof=proof_id,
        priority=pb2.NORMAL,
        vanilla_proof=envelope,
        sector_number=sector["sector_id"],
        miner_id=args.miner,
    )
    # Curio's client options: 256 MiB messages both ways.
    opts = [("grpc.max_send_message_length", 256 << 20), ("grpc.max_receive_message_length", 256 << 20)]
    stub = pb2_grpc.ProvingEngineStub(grpc.insecure_channel(args.addr, options=opts))

    t0 = time.time()
    sub = stub.SubmitProof(request)
    print(f"SubmitProof: job_id={sub.job_id} queue_position={sub.queue_position}")
    again = stub.SubmitProof(request)
    print(f"SubmitProof again (same request_id): job_id={again.job_id}")
    if again.job_id != sub.job_id:
        sys.exit("idempotency broken: the same request_id gave another job")
    short = stub.AwaitProof(pb2.AwaitProofRequest(job_id=sub.job_id, timeout_ms=50))
    print(f"AwaitProof(timeout_ms=50): {pb2.AwaitProofResponse.Status.Name(short.status)}")
    status = stub.GetStatus(pb2.GetStatusRequest())
    print("GetStatus: queues", [(q.proof_kind, q.pending, q.in_progress) for q in status.queues],
          "loaded", [s.circuit_id for s in status.loaded_srs], "pinned", status.pinned_memory_bytes)
    res = stub.AwaitProof(pb2.AwaitProofRequest(job_id=sub.job_id, timeout_ms=0))
    name = pb2.AwaitProofResponse.Status.Name(res.status)
    print(f"AwaitProof: {name} proof={len(res.proof)} bytes queue_wait_ms={res.queue_wait_ms} "
          f"synthesis_ms={res.synthesis_ms} gpu_compute_ms={res.gpu_compute_ms} total_ms={res.total_ms} "
          f"(client saw {time.time() - t0:.1f} s)")
    if res.status != pb2.AwaitProofResponse.COMPLETED:
        sys.exit(f"not completed: {res.error_message}")
    with open(args.proof_out, "wb") as f:
        f.write(res.proof)
    print(f"wrote {args.proof_out}")
    # A bad request through Curio's stubs: its typed status.
    bad = pb2.SubmitProofRequest()
    bad.CopyFrom(request)
    bad.request_id = "bad"
    bad.sector_size = 4096
    try:
        stub.SubmitProof(bad)
        sys.exit("a sector size mismatch was accepted")
    except grpc.RpcError as e:
        print(f"bad request: {e.code().name}: {e.details()}")


if __name__ == "__main__":
    main()
