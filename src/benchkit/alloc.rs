//! The allocation-strategy benchmark (issue 2): fresh Vec, push-grown Vec, async drop, bump, VecPool, SlabPool.
