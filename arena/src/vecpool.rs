//! [`VecPool<T>`]: recycled small `Vec`s (to be completed: see issue 2).
use std::sync::Mutex;
/// Recycled Vecs: `take` returns a cleared Vec with its capacity kept; `give` returns it.
pub struct VecPool<T> {
    free: Mutex<Vec<Vec<T>>>,
}
impl<T> VecPool<T> {
    pub fn new() -> Self {
        VecPool { free: Mutex::new(Vec::new()) }
    }
    pub fn take(&self) -> Vec<T> {
        self.free.lock().unwrap().pop().unwrap_or_default()
    }
    pub fn give(&self, mut v: Vec<T>) {
        v.clear();
        self.free.lock().unwrap().push(v);
    }
}
impl<T> Default for VecPool<T> {
    fn default() -> Self {
        Self::new()
    }
}
