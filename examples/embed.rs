//! Embedding the engine in a long-lived prover process: reserve once, prove job after job.
//!
//! `cargo run --release --example embed`
use std::sync::Arc;

use arenaprove::circuits::circuits::ChainCircuit;
use arenaprove::circuits::shape_of;
use arenaprove::engine::deps::rand_chacha::ChaCha20Rng;
use arenaprove::engine::deps::rand_core::SeedableRng;
use arenaprove::engine::groth16::{generate_random_parameters, ParamsMemory};
use arenaprove::engine::pipeline::{generic, CircuitSpec, Engine, EngineConfig, Job, ShutdownMode};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Any bellpepper-core 0.2 circuit works; here the chain test circuit, 4,096 steps.
    let circuit = |seed| ChainCircuit::new(4_096, seed);
    let shape = shape_of(circuit(0))?;
    // Real deployments load a params file: Parameters::read_file(path, true, &mem).
    // Development params from random toxic waste (INSECURE) keep the example self-contained.
    let params = Arc::new(generate_random_parameters(
        circuit(0),
        &mut ChaCha20Rng::from_entropy(),
        &ParamsMemory::default(),
    )?);

    // Everything is reserved here, then the arena is frozen.
    let engine = Engine::new(
        EngineConfig::default(),
        vec![CircuitSpec { kind: "chain".into(), shape, params, matrices: None }],
    )?;
    print!("{}", engine.memory_plan());

    for sector in 1..=3u64 {
        let partitions = (0..4).map(|p| generic(circuit(sector * 10 + p))).collect();
        let out = engine.prove(Job::new("chain", partitions))?;
        let proofs = out.proof_bytes().ok_or("a partition failed")?;
        println!("sector {sector}: {} bytes of verified proofs in {:.2?}", proofs.len(), out.wall);
    }
    let report = engine.shutdown(ShutdownMode::Drain);
    assert_eq!(report.slabs_outstanding, 0);
    println!("ledger balanced: {}", report.ledger.balanced());
    Ok(())
}
