#pragma once
// The T5 / umT5 tokenizer of a diffusers pipeline's `tokenizer/` folder, producing what transformers'
// T5TokenizerFast gives for tokenizer(texts, padding="max_length", max_length=L, truncation=True,
// add_special_tokens=True): the pieces, the end-of-sequence token, padding to L and the attention mask.
//
// Pieces come from libsentencepiece with the folder's spiece.model. The Hugging Face tokenizer of the
// same model (tokenizer.json: the model's normalization table, WhitespaceSplit + Metaspace, Unigram)
// gives the same pieces, with two differences handled here:
//  - special-token text ("</s>", "<pad>", "<unk>") written in the input is the special token itself
//    for Hugging Face; sentencepiece would spell it out in pieces;
//  - U+0085 (NEXT LINE) separates words for Hugging Face's whitespace split, while sentencepiece's
//    nmt_nfkc normalization keeps it as a character of the word.
// A difference that remains: Hugging Face applies the normalization table per grapheme cluster,
// sentencepiece per longest match; they can differ on rare multi-code-point sequences.
//
// TokenizedBatch is shared by the other tokenizers here: bpe_tokenizer.h (Qwen2 byte-level BPE) and
// byt5_tokenizer.h (ByT5).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dattn {

struct TokenizedBatch {
  std::int64_t batch = 0, length = 0;
  std::vector<std::int64_t> input_ids;       // [batch, length], row-major
  std::vector<std::int64_t> attention_mask;  // 1 for the tokens and the end-of-sequence, 0 for padding
  // Number of tokens of row b that are not padding (where the text encoder's output is kept).
  std::int64_t valid_length(std::int64_t b) const;
};

class T5Tokenizer {
 public:
  // Reads DIR/spiece.model and DIR/tokenizer_config.json (eos_token, pad_token, unk_token,
  // model_max_length, additional special tokens). Throws UserError naming the file and what is wrong.
  static T5Tokenizer load(const std::string& tokenizer_dir);
  T5Tokenizer(T5Tokenizer&&) noexcept;
  T5Tokenizer& operator=(T5Tokenizer&&) noexcept;
  ~T5Tokenizer();

  // The pieces of `text` without end-of-sequence token or padding. `text` must be UTF-8.
  std::vector<int> encode_pieces(std::string_view text) const;
  // Pieces truncated to max_length - 1, then end-of-sequence, then padding to max_length.
  TokenizedBatch encode(const std::vector<std::string>& texts, int max_length) const;

  int eos_id() const { return eos_id_; }
  int pad_id() const { return pad_id_; }
  int unk_id() const { return unk_id_; }
  int vocab_size() const;
  // tokenizer_config.json's model_max_length (capped at INT32_MAX: configs write 1e30 for "none").
  std::int64_t model_max_length() const { return model_max_length_; }

 private:
  struct Impl;
  explicit T5Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  int eos_id_ = 1, pad_id_ = 0, unk_id_ = 2;
  std::int64_t model_max_length_ = 512;
};

}  // namespace dattn
