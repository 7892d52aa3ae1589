// SafetensorsFile and write_safetensors: round trips, the real golden files, and one crafted malformed
// file per header validation rule (each error must name the file and the problem).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "support/golden_dir.h"
#include "dattn/core/error.h"
#include "dattn/io/safetensors.h"
#include "dattn/io/safetensors_writer.h"
#include "dattn/io/weight_store.h"

namespace fs = std::filesystem;
using namespace dattn;

namespace {

template <class T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// A fresh directory per test, removed afterwards.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "." + info->name();
    for (char& c : name)
      if (c == '/') c = '_';
    dir_ = fs::temp_directory_path() / ("dattn_io_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  // Writes [header length][header][data] by hand; `length` overrides the header length field.
  std::string raw(const std::string& header, std::size_t data_size, std::optional<std::uint64_t> length = {}) {
    const std::string p = file("raw.safetensors");
    std::ofstream out(p, std::ios::binary);
    const std::uint64_t n = length.value_or(header.size());
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << std::string(data_size, '\0');
    return p;
  }

  fs::path dir_;
};

// Opening `path` must fail with a one-line UserError naming the file and containing every fragment.
void expect_error(const std::string& path, const std::vector<std::string>& fragments) {
  try {
    SafetensorsFile f(path);
    ADD_FAILURE() << "no error for " << path;
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

TEST_F(SafetensorsTest, RoundTripThroughWriter) {
  const std::string p = file("rt.safetensors");
  const std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, -7.0f};
  const std::vector<std::int64_t> b = {-3, 1LL << 40};
  write_safetensors(p,
                    {{"a", "F32", {2, 3}, bytes_of(a)},
                     {"b.idx", "I64", {2}, bytes_of(b)},
                     {"scalar", "F64", {}, bytes_of(std::vector<double>{0.125})},
                     {"empty", "F32", {0, 4}, {}}},
                    {{"format", "pt"}, {"note", "hello"}});
  SafetensorsFile f(p);
  EXPECT_EQ(f.path(), p);
  EXPECT_EQ(f.tensors().size(), 4u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("note"), "hello");
  EXPECT_EQ(f.info("a").dtype, "F32");
  EXPECT_EQ(f.info("a").shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(f.info("a").numel(), 6);
  EXPECT_EQ(std::memcmp(f.data("a"), a.data(), 24), 0);
  EXPECT_EQ(f.read_f64("a"), std::vector<double>(a.begin(), a.end()));
  EXPECT_EQ(f.read_f64("b.idx"), (std::vector<double>{-3.0, 1099511627776.0}));
  EXPECT_EQ(f.info("scalar").numel(), 1);
  EXPECT_EQ(f.read_f64("scalar"), std::vector<double>{0.125});
  EXPECT_EQ(f.info("empty").numel(), 0);
  EXPECT_TRUE(f.read_f64("empty").empty());
  EXPECT_TRUE(f.contains("a"));
  EXPECT_FALSE(f.contains("__metadata__"));
  // The header is padded so the data section starts 8-byte aligned.
  std::ifstream in(p, std::ios::binary);
  std::uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST_F(SafetensorsTest, ReadF64ConvertsEveryDtype) {
  const std::string p = file("dtypes.safetensors");
  write_safetensors(p, {
      {"f16", "F16", {3}, bytes_of(std::vector<std::uint16_t>{0x3C00, 0xC000, 0x3555})},  // 1, -2, ~1/3
      {"bf16", "BF16", {2}, bytes_of(std::vector<std::uint16_t>{0x3F80, 0xC0A0})},        // 1, -5
      {"e4m3", "F8_E4M3", {3}, {0x38, 0xC0, 0x7E}},                                        // 1, -2, 448
      {"e5m2", "F8_E5M2", {3}, {0x3C, 0xC0, 0x7B}},                                        // 1, -2, 57344
      {"i8", "I8", {2}, {0x80, 0x7F}},
      {"u8", "U8", {2}, {0x00, 0xFF}},
      {"bool", "BOOL", {3}, {0, 1, 2}},
      {"i16", "I16", {1}, bytes_of(std::vector<std::int16_t>{-300})},
      {"i32", "I32", {1}, bytes_of(std::vector<std::int32_t>{-70000})},
      {"u16", "U16", {1}, bytes_of(std::vector<std::uint16_t>{65535})},
      {"u32", "U32", {1}, bytes_of(std::vector<std::uint32_t>{4000000000u})},
      {"u64", "U64", {1}, bytes_of(std::vector<std::uint64_t>{1ull << 50})},
  });
  SafetensorsFile f(p);
  const auto f16 = f.read_f64("f16");
  EXPECT_EQ(f16[0], 1.0);
  EXPECT_EQ(f16[1], -2.0);
  EXPECT_NEAR(f16[2], 1.0 / 3.0, 1e-3);
  EXPECT_EQ(f.read_f64("bf16"), (std::vector<double>{1.0, -5.0}));
  EXPECT_EQ(f.read_f64("e4m3"), (std::vector<double>{1.0, -2.0, 448.0}));
  EXPECT_EQ(f.read_f64("e5m2"), (std::vector<double>{1.0, -2.0, 57344.0}));
  EXPECT_EQ(f.read_f64("i8"), (std::vector<double>{-128.0, 127.0}));
  EXPECT_EQ(f.read_f64("u8"), (std::vector<double>{0.0, 255.0}));
  EXPECT_EQ(f.read_f64("bool"), (std::vector<double>{0.0, 1.0, 1.0}));
  EXPECT_EQ(f.read_f64("i16"), std::vector<double>{-300.0});
  EXPECT_EQ(f.read_f64("i32"), std::vector<double>{-70000.0});
  EXPECT_EQ(f.read_f64("u16"), std::vector<double>{65535.0});
  EXPECT_EQ(f.read_f64("u32"), std::vector<double>{4000000000.0});
  EXPECT_EQ(f.read_f64("u64"), std::vector<double>{1125899906842624.0});
}

TEST(SafetensorsGolden, WanTransformerCase) {
  SafetensorsFile f(dattn::testing::golden_dir() + "/wan_tiny/cases/transformer_t2v_scalar_t.safetensors");
  const TensorInfo& q = f.info("blocks.0.attn_self.q");
  EXPECT_EQ(q.dtype, "F64");
  EXPECT_EQ(q.shape, (std::vector<std::int64_t>{1, 72, 2, 64}));
  const auto v = f.read_f64("blocks.0.attn_self.q");
  ASSERT_EQ(v.size(), 72u * 2 * 64);
  EXPECT_DOUBLE_EQ(v[0], -2.8737787989380608);  // read with Python's struct module
  EXPECT_EQ(f.info("input.hidden_states").shape, (std::vector<std::int64_t>{1, 8, 3, 8, 12}));
  // The float32 forward is stored widened to F64, with the float64 output's shape.
  EXPECT_EQ(f.info("output.sample_fp32").shape, f.info("output.sample").shape);
}

TEST(SafetensorsGolden, Hv15MaskedCase) {
  SafetensorsFile f(dattn::testing::golden_dir() + "/hv15_tiny/cases/transformer_t2v_masked.safetensors");
  EXPECT_EQ(f.info("input.encoder_attention_mask").dtype, "I64");
  EXPECT_EQ(f.read_f64("input.encoder_attention_mask"),
            (std::vector<double>{1, 1, 1, 1, 1, 1, 1, 0, 0, 0}));  // 7 of 10 valid
  EXPECT_EQ(f.info("attn_call0.mask").shape, (std::vector<std::int64_t>{1, 1, 165, 165}));
  EXPECT_EQ(f.info("input.hidden_states").dtype, "F32");
  EXPECT_EQ(f.read_f64("input.timestep"), std::vector<double>{600.0});
}

TEST_F(SafetensorsTest, UnknownNameNamesFileAndTensorAndSuggests) {
  const std::string p = file("names.safetensors");
  write_safetensors(p, {{"blocks.0.attn.q", "U8", {1}, {1}}, {"blocks.1.attn.q", "U8", {1}, {2}}});
  SafetensorsFile f(p);
  for (auto call : {+[](const SafetensorsFile& s) { (void)s.info("blocks.2.attn.q"); },
                    +[](const SafetensorsFile& s) { (void)s.data("blocks.2.attn.q"); },
                    +[](const SafetensorsFile& s) { (void)s.read_f64("blocks.2.attn.q"); }}) {
    try {
      call(f);
      ADD_FAILURE() << "no error";
    } catch (const UserError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(p), std::string::npos) << msg;
      EXPECT_NE(msg.find("'blocks.2.attn.q'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("did you mean 'blocks.0.attn.q'"), std::string::npos) << msg;
    }
  }
}

// WeightStore::host_view: the stored values in the file's dtype without a copy; shape checked, name used.
// A message for the folder `dir` as WeightStore opens it ("" when it opens).
std::string weight_store_error(const std::string& dir) {
  try {
    WeightStore store(dir);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// An index's weight_map named "../outside.safetensors" or an absolute path, and the file outside the folder
// was loaded; a link loop or a name too long was an internal error (exit 1) instead of a one-line one.
TEST_F(SafetensorsTest, AnIndexNamesOnlyFilesOfItsOwnFolder) {
  const std::vector<float> w = {1.0f, 2.0f};
  fs::create_directories(dir_ / "model");
  write_safetensors(file("outside.safetensors"), {{"w", "F32", {2}, bytes_of(w)}});
  write_safetensors(file("model/shard.safetensors"), {{"w", "F32", {2}, bytes_of(w)}});
  const auto index = [&](const std::string& name) {
    std::ofstream(file("model/diffusion_pytorch_model.safetensors.index.json"))
        << R"({"metadata": {}, "weight_map": {"w": ")" + name + R"("}})";
  };
  index("shard.safetensors");
  EXPECT_EQ(weight_store_error(file("model")), "");
  for (const std::string& name : std::vector<std::string>{"../outside.safetensors", file("outside.safetensors"),
                                                           "sub/shard.safetensors", ".."}) {
    index(name);
    const std::string e = weight_store_error(file("model"));
    EXPECT_NE(e.find("expected the name of a shard file in the index's own folder"), std::string::npos) << name << ": " << e;
  }
  fs::create_symlink("loop.safetensors", file("model/loop.safetensors"));
  index("loop.safetensors");
  EXPECT_NE(weight_store_error(file("model")).find("(Too many levels of symbolic links)"), std::string::npos)
      << weight_store_error(file("model"));
  index(std::string(300, 'a') + ".safetensors");
  EXPECT_NE(weight_store_error(file("model")).find("shard '"), std::string::npos) << weight_store_error(file("model"));
  // A syntax error is named with the parser's position, not as "not a JSON object".
  std::ofstream(file("model/diffusion_pytorch_model.safetensors.index.json")) << R"({"weight_map": {"w": "shard.safetensors",,}})";
  EXPECT_NE(weight_store_error(file("model")).find("not valid JSON"), std::string::npos) << weight_store_error(file("model"));
}

// write_safetensors from a pointer (WrittenTensor::data) writes the same file as from a byte vector.
TEST_F(SafetensorsTest, HostViewAndPointerWrites) {
  const std::vector<float> w = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  const std::string owned = file("owned.safetensors"), pointed = file("pointed.safetensors");
  write_safetensors(owned, {{"w", "F32", {2, 3}, bytes_of(w)}});
  WrittenTensor view{"w", "F32", {2, 3}, {}};
  view.data = w.data();
  view.size = w.size() * sizeof(float);
  write_safetensors(pointed, {view});
  std::ifstream a(owned, std::ios::binary), b(pointed, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}), std::string(std::istreambuf_iterator<char>(b), {}));
  view.size -= 4;
  EXPECT_THROW(write_safetensors(file("short.safetensors"), {view}), UserError);

  WeightStore store(std::vector<std::string>{pointed});
  const Tensor t = store.host_view("w", {2, 3});
  EXPECT_EQ(t.dtype(), DType::F32);
  EXPECT_EQ(t.to_f32_vector(), w);
  EXPECT_TRUE(store.unused().empty());
  EXPECT_THROW(store.host_view("w", {3, 2}), UserError);
}

// A host take of the stored dtype is a copy of the file's bytes (made over the threads for a large tensor:
// 5 MiB and a ragged tail here), and owns them: it outlives the store and its mapping.
TEST_F(SafetensorsTest, HostTakeOfALargeTensorIsTheFilesBytes) {
  std::vector<std::uint8_t> bytes((std::size_t{5} << 20) + 6);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 2654435761u >> 13);
  const std::string p = file("big.safetensors");
  write_safetensors(p, {{"big", "BF16", {static_cast<std::int64_t>(bytes.size() / 2)}, bytes}});
  Tensor t;
  {
    WeightStore store(std::vector<std::string>{p});
    t = store.take("big", DType::BF16, Device::CPU);
  }
  ASSERT_EQ(t.bytes(), bytes.size());
  EXPECT_EQ(std::memcmp(t.data(), bytes.data(), bytes.size()), 0);
}

// WeightStore::take_mapped: in the stored dtype a view into the mapping that keeps the file mapped after
// the store is gone (no copy: its data points into the file's mapping, not at a fresh buffer); in another
// dtype take()'s converted copy. Shape checked, name used, either way.
TEST_F(SafetensorsTest, TakeMappedViewsTheFileInItsDtypeAndConvertsOtherwise) {
  const std::vector<float> w = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  const std::string p = file("mapped.safetensors");
  write_safetensors(p, {{"w", "F32", {2, 3}, bytes_of(w)}, {"v", "F32", {3}, bytes_of(std::vector<float>{1, 2, 3})}});
  Tensor view, copy, twice;
  {
    WeightStore store(std::vector<std::string>{p});
    view = store.take_mapped("w", DType::F32, {2, 3});
    twice = store.take_mapped("w", DType::F32, {2, 3});
    EXPECT_EQ(view.data(), twice.data());  // both point into the one mapping
    EXPECT_THROW(store.take_mapped("v", DType::F32, {4}), UserError);
    copy = store.take_mapped("v", DType::BF16, {3});
    EXPECT_TRUE(store.unused().empty());
  }
  EXPECT_EQ(view.dtype(), DType::F32);
  EXPECT_EQ(view.to_f32_vector(), w);  // read after the store is gone: the view kept the file mapped
  EXPECT_EQ(copy.dtype(), DType::BF16);
  EXPECT_EQ(copy.to_f32_vector(), (std::vector<float>{1, 2, 3}));
}

// WeightStore::take of a slice (tensor parallel's shards): the rows or columns asked for, converted as a
// whole take is, the whole tensor's shape checked, the name marked used; a slice outside is refused.
TEST_F(SafetensorsTest, TakeOfASliceIsThoseRowsOrColumns) {
  std::vector<float> w(3 * 4), c(2 * 3 * 4);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) + 0.25f;
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(i) - 7.0f;  // exact in bf16
  const std::string p = file("sliced.safetensors");
  const Tensor c16 = Tensor::from_f32(c, {2, 3, 4}, DType::BF16);
  write_safetensors(p, {{"w", "F32", {3, 4}, bytes_of(w)},
                        {"c", "BF16", {2, 3, 4},
                         std::vector<std::uint8_t>(static_cast<const std::uint8_t*>(c16.data()),
                                                   static_cast<const std::uint8_t*>(c16.data()) + c16.bytes())}});
  WeightStore store(std::vector<std::string>{p});

  const Tensor rows = store.take("w", DType::F32, Device::CPU, {3, 4}, {0, 1, 2});
  EXPECT_EQ(rows.shape(), (Shape{2, 4}));
  EXPECT_EQ(rows.to_f32_vector(), std::vector<float>(w.begin() + 4, w.end()));
  const Tensor cols = store.take("w", DType::BF16, Device::CPU, {3, 4}, {1, 2, 2});
  EXPECT_EQ(cols.shape(), (Shape{3, 2}));
  EXPECT_EQ(cols.dtype(), DType::BF16);
  EXPECT_EQ(cols.to_f32_vector(), Tensor::from_f32({w[2], w[3], w[6], w[7], w[10], w[11]}, {6}, DType::BF16)
                                      .to_f32_vector());
  // A middle dimension: for each outer index, entries [1, 3) of dimension 1.
  const Tensor mid = store.take("c", DType::F32, Device::CPU, {2, 3, 4}, {1, 1, 2});
  EXPECT_EQ(mid.shape(), (Shape{2, 2, 4}));
  std::vector<float> want(c.begin() + 4, c.begin() + 12);
  want.insert(want.end(), c.begin() + 16, c.end());
  EXPECT_EQ(mid.to_f32_vector(), want);
  EXPECT_TRUE(store.unused().empty());

  const auto refused = [&](const TensorSlice& slice, const std::string& part) {
    try {
      store.take("w", DType::F32, Device::CPU, {3, 4}, slice);
      ADD_FAILURE() << "accepted a slice of dimension " << slice.dim;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  refused({0, 2, 2}, "tensor 'w' [3,4]: cannot take entries [2, 4) of dimension 0; expected a slice inside the tensor");
  refused({2, 0, 1}, "of dimension 2");
  refused({1, 0, 0}, "cannot take entries [0, 0)");
  refused({0, -1, 1}, "cannot take entries [-1, 0)");
  EXPECT_THROW(store.take("w", DType::F32, Device::CPU, {4, 3}, {0, 0, 1}), UserError);  // the whole shape is checked
}

TEST_F(SafetensorsTest, MissingFile) { expect_error(file("nope.safetensors"), {"cannot open"}); }

TEST_F(SafetensorsTest, ShorterThan8Bytes) {
  const std::string p = file("short.safetensors");
  std::ofstream(p, std::ios::binary) << "abcde";
  expect_error(p, {"5 bytes", "shorter than"});
}

TEST_F(SafetensorsTest, HeaderLengthZero) { expect_error(raw("", 16), {"header length is 0"}); }

TEST_F(SafetensorsTest, HeaderLengthBeyondFile) {
  expect_error(raw("{}      ", 0, 9), {"header length 9", "larger than the file"});
}

TEST_F(SafetensorsTest, HeaderLengthOver100MB) {
  expect_error(raw("{}      ", 0, 100'000'001), {"header length 100000001", "100 MB"});
}

TEST_F(SafetensorsTest, WriterRejectsUnwritablePath) {
  const std::string p = file("no/such/dir/x.safetensors");
  try {
    write_safetensors(p, {});
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot open for writing"), std::string::npos) << e.what();
  }
}

TEST_F(SafetensorsTest, WriterRejectsBadInput) {
  const std::string p = file("bad.safetensors");
  EXPECT_THROW(write_safetensors(p, {{"x", "F32", {2}, {0, 0, 0, 0}}}), UserError);  // 4 bytes, needs 8
  EXPECT_THROW(write_safetensors(p, {{"x", "F31", {1}, {0, 0, 0, 0}}}), UserError);
  EXPECT_THROW(write_safetensors(p, {{"x", "U8", {1}, {0}}, {"x", "U8", {1}, {0}}}), UserError);
}

// Header validation: one crafted header per rule. Data sections are zero-filled to `data` bytes.
struct BadHeader {
  const char* name;
  std::string header;
  std::size_t data;
  std::vector<std::string> expect;
};

class SafetensorsBadHeader : public SafetensorsTest, public ::testing::WithParamInterface<BadHeader> {};

TEST_P(SafetensorsBadHeader, IsRejected) { expect_error(raw(GetParam().header, GetParam().data), GetParam().expect); }

const std::string kOk = R"("ok":{"dtype":"U8","shape":[4],"data_offsets":[0,4]})";

INSTANTIATE_TEST_SUITE_P(
    Rules, SafetensorsBadHeader,
    ::testing::Values(
        BadHeader{"InvalidJson", R"({"t":{"dtype":"U8",)", 0, {"not valid JSON"}},
        BadHeader{"NotAnObject", "[1, 2, 3]", 0, {"not a JSON object"}},
        BadHeader{"MetadataNotObject", R"({"__metadata__":"x"})", 0, {"__metadata__ is not a JSON object"}},
        BadHeader{"MetadataValueNotString", R"({"__metadata__":{"epoch":3}})", 0, {"'epoch'", "not a string"}},
        BadHeader{"EntryNotObject", R"({"t":[1]})", 0, {"tensor 't'", "not a JSON object"}},
        BadHeader{"MissingDtype", R"({"t":{"shape":[1],"data_offsets":[0,1]}})", 1, {"tensor 't'", "missing 'dtype'"}},
        BadHeader{"MissingShape", R"({"t":{"dtype":"U8","data_offsets":[0,1]}})", 1, {"tensor 't'", "missing 'shape'"}},
        BadHeader{"MissingOffsets", R"({"t":{"dtype":"U8","shape":[1]}})", 1, {"tensor 't'", "missing 'data_offsets'"}},
        BadHeader{"ExtraKey", R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}})", 1,
                  {"tensor 't'", "unexpected key 'x'"}},
        BadHeader{"DtypeNotString", R"({"t":{"dtype":8,"shape":[1],"data_offsets":[0,1]}})", 1,
                  {"tensor 't'", "dtype is not a string"}},
        BadHeader{"UnknownDtype", R"({"t":{"dtype":"F4","shape":[1],"data_offsets":[0,1]}})", 1,
                  {"tensor 't'", "unknown dtype 'F4'"}},
        BadHeader{"ShapeNotArray", R"({"t":{"dtype":"U8","shape":1,"data_offsets":[0,1]}})", 1,
                  {"tensor 't'", "shape is not an array"}},
        BadHeader{"ShapeNegative", R"({"t":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", 1,
                  {"tensor 't'", "not a non-negative integer"}},
        BadHeader{"ShapeFloat", R"({"t":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", 1,
                  {"tensor 't'", "not a non-negative integer"}},
        BadHeader{"OffsetsNotPair", R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", 1,
                  {"tensor 't'", "data_offsets must be [begin, end]"}},
        BadHeader{"OffsetsNegative", R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", 1,
                  {"tensor 't'", "data_offsets must be [begin, end]"}},
        BadHeader{"BeginAfterEnd", R"({"t":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}})", 2,
                  {"tensor 't'", "begin 2 is after end 1"}},
        BadHeader{"SizeMismatch", R"({"t":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 24,
                  {"tensor 't'", "cover 20 bytes", "need 24"}},
        BadHeader{"SizeOverflow",
                  R"({"t":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", 0,
                  {"tensor 't'", "overflows"}},
        BadHeader{"PastDataSection", "{" + kOk + "}", 3, {"tensor 'ok'", "past the data section (3 bytes)"}},
        BadHeader{"Overlap", "{" + kOk + R"(,"x":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}})", 5,
                  {"'ok' and 'x'", "overlapping"}},
        BadHeader{"DuplicateName", "{" + kOk + "," + kOk + "}", 4, {"tensor 'ok'", "duplicate tensor name"}},
        BadHeader{"DuplicateKeyInEntry", R"({"t":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                  1, {"tensor 't'", "duplicate key 'dtype'"}}),
    [](const ::testing::TestParamInfo<BadHeader>& info) { return std::string(info.param.name); });

}  // namespace
