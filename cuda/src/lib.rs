//! # arenaprove-cuda
//! Will own the GPU backend: kernels (NTT, MSM) loaded from an embedded fatbin through
//! cudarc's driver API, pinned registration of arena regions (a `RegionHook`), and the
//! device arena. Not built yet: the CPU backend in `engine/` is the only backend today.
