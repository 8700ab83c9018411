//! `arenaprove bench-alloc` (issue 2).
#[derive(clap::Args)]
pub struct Args {}
pub fn run(_a: Args) -> anyhow::Result<()> {
    anyhow::bail!("bench-alloc is being built (issue 2)")
}
