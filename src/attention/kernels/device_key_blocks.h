#pragma once
// SPARSE_BLOCK's kept key blocks in device memory, as the CUDA attention kernels read them. Plain C++
// (no CUDA headers), shared by the mask estimator (block_mask_cuda.cu) and the kernels.
//
// Row r = (b * heads_q + h) * query_blocks + qb (the CPU BlockMask's indexing) holds counts[r] key
// block indices at blocks[r * key_blocks ...], ascending (the order the kernels visit them in). Every
// listed block starts before its batch item's valid key length (the estimator never lists a block
// without a valid key; sparse_attention_cuda_entry drops such blocks from a hand-made mask).
namespace dattn::sparse {

struct DeviceKeyBlocks {
  const int* blocks = nullptr;  // [B * Hq * query_blocks][key_blocks], ascending, first counts[r] valid
  const int* counts = nullptr;  // [B * Hq * query_blocks]
  int block_size = 0;           // 64 or 128: rows per query block, keys per key block
  int query_blocks = 0;         // ceil(Sq / block_size)
  int key_blocks = 0;           // ceil(Sk / block_size): the row stride of `blocks`
};

}  // namespace dattn::sparse
