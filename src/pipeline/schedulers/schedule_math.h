#pragma once
// The numeric building blocks of the diffusers schedulers, each rounding exactly as the numpy or
// torch operation it stands for, so that schedules and rollouts match to the last bit.
#include <vector>

namespace dattn::sched {

// numpy.linspace(start, stop, num) in float64: i * ((stop - start) / (num - 1)) + start, the last
// value exactly `stop`.
std::vector<double> np_linspace(double start, double stop, int num);

// shift * s / (1 + (shift - 1) * s) per element in float64 (numpy).
std::vector<double> shift_sigmas(const std::vector<double>& sigmas, double shift);

// diffusers stretch_shift_to_terminal in float64: 1 - (1 - s) / ((1 - s[-1]) / (1 - terminal)).
std::vector<double> stretch_to_terminal(const std::vector<double>& sigmas, double terminal);

// torch.log / torch.expm1 of a float32 0-dim tensor: computed in double and rounded once, i.e. the
// correctly rounded float result that the vector math libraries return.
float log_f32(float x);
float expm1_f32(float x);

// torch.linalg.solve of a small float32 system as MKL's sgesv computes it on x86 (torch's CPU LAPACK):
// LU with partial pivoting (first largest |pivot|), multiplication by reciprocals of the pivots instead
// of division, and fused multiply-adds in the substitutions. The reference LAPACK divides and does not
// fuse; that differs by float32 roundings, which the golden rollouts show (1e-11 instead of 1e-16).
// `a` is row-major n x n. Throws std::runtime_error for a singular matrix.
std::vector<float> solve_f32(std::vector<float> a, std::vector<float> b);

}  // namespace dattn::sched
