// What kernels/ntt.cu finds as "common.cuh" in the CPU check (cuda/tests/emu.rs copies the
// kernel source next to this file under that name): the emulator, and Fr as the small field
// of small_fr.hpp instead of sppark's BLS12-381 scalar field.
#pragma once
#include "cuda_emu.hpp"
#include "small_fr.hpp"
#include "index.cuh"
