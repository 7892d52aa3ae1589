#pragma once
// The CUDA libraries' per-context state (the cuBLASLt handle and workspace of the GEMMs, the cuDNN
// handle of the convolutions), made ahead of the first op that needs it: a pipeline makes it on a
// thread of its own while its components load, so the first text encode and the first VAE decode do
// not pay for it. Each is made once per run context either way (RunContext extensions).
namespace dattn::ops {

// Makes what the current CUDA context lacks of that state; holds the context's lock only to store
// it, so it may run beside loads on that context. Throws what the libraries' creation throws (the op
// that needs the state later would throw the same); UserError in a build without CUDA.
void prepare_cuda_libraries();

}  // namespace dattn::ops
