//! A counting global allocator for tests and benches (to be completed: see issue 2).
