//! [`Scratch`]: per-worker bump arenas (to be completed: see issue 2).
/// A bump arena reset between units of work.
pub struct Scratch {
    bump: bumpalo::Bump,
}
impl Scratch {
    pub fn new() -> Self {
        Scratch { bump: bumpalo::Bump::new() }
    }
    pub fn bump(&self) -> &bumpalo::Bump {
        &self.bump
    }
    pub fn reset(&mut self) {
        self.bump.reset();
    }
}
impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}
