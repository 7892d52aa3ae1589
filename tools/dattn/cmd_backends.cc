// dattn backends: every registered backend, whether it runs on a device and why not, what it accepts.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "dattn/attention/registry.h"
#include "dattn/command.h"
#include "dattn/device_option.h"
#include "dattn/shape_option.h"

namespace dattn::tool {
namespace {

struct BackendsOptions {
  std::string device = "cpu";
  std::string shape;  // B,Sq,Sk,H,D; empty: the reference shape (Wan2.2-5B self-attention)
  bool json = false;
};

nlohmann::ordered_json backend_json(const AttentionBackend& b, Device device, const AttentionShape& shape,
                                    bool is_default) {
  const Support avail = backend_availability(b, device, shape);
  const SupportSurface surf = b.surface(device);
  nlohmann::ordered_json e;
  e["name"] = std::string(b.name());
  e["device"] = std::string(device_name(device));
  e["available"] = avail.ok;
  e["reason"] = avail.ok ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(avail.reason);
  e["platform_default"] = is_default;
  e["lossy"] = b.lossy();
  e["summary"] = std::string(b.summary());
  e["dtypes"] = nlohmann::ordered_json::array();
  for (DType t : surf.dtypes) e["dtypes"].push_back(std::string(dtype_name(t)));
  e["head_dims"] = surf.head_dims;
  e["masks"] = surf.masks;
  e["extra"] = nlohmann::ordered_json::array();
  for (const ExtraKey& k : b.extra_keys()) {
    nlohmann::ordered_json x;
    x["key"] = k.name;
    x["type"] = std::string(extra_type_name(k.type));
    x["default"] = nlohmann::ordered_json::parse(k.default_value.dump());
    x["range"] = k.range;
    x["help"] = k.help;
    e["extra"].push_back(x);
  }
  return e;
}

void print_backend(const nlohmann::ordered_json& e) {
  std::printf("%s\n", e["name"].get<std::string>().c_str());
  if (e["available"].get<bool>())
    std::printf("  available on %s%s\n", e["device"].get<std::string>().c_str(),
                e["platform_default"].get<bool>() ? " (platform default)" : "");
  else
    std::printf("  unavailable on %s: %s\n", e["device"].get<std::string>().c_str(),
                e["reason"].get<std::string>().c_str());
  std::printf("  %s%s\n", e["summary"].get<std::string>().c_str(), e["lossy"].get<bool>() ? " (lossy)" : " (exact)");
  std::string dtypes;
  for (const auto& t : e["dtypes"]) dtypes += (dtypes.empty() ? "" : ", ") + t.get<std::string>();
  std::printf("  dtypes: %s; head dims: %s; masks: %s\n", dtypes.empty() ? "none" : dtypes.c_str(),
              e["head_dims"].get<std::string>().c_str(), e["masks"].get<std::string>().c_str());
  if (e["extra"].empty()) std::printf("  extra: none\n");
  for (const auto& x : e["extra"])
    std::printf("  extra.%s: %s, default %s, %s. %s\n", x["key"].get<std::string>().c_str(),
                x["type"].get<std::string>().c_str(), x["default"].is_null() ? "unset" : x["default"].dump().c_str(),
                x["range"].get<std::string>().c_str(), x["help"].get<std::string>().c_str());
}

int run_backends(const BackendsOptions& o) {
  const Device device = device_from_option(o.device);
  const AttentionShape shape = nominal_shape_option(o.shape, device);
  const AttentionBackend* def = platform_default_backend(shape, device);
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const AttentionBackend* b : registered_backends()) arr.push_back(backend_json(*b, device, shape, b == def));
  if (o.json) {
    std::printf("%s\n", arr.dump().c_str());
    return 0;
  }
  if (device == Device::CUDA) std::printf("device: cuda, %s\n\n", cuda_device_summary().c_str());
  for (const auto& e : arr) print_backend(e);
  if (!def) std::printf("\nno platform default on %s: neither FLASH_ATTN nor TORCH_SDPA can run there\n",
                        std::string(device_name(device)).c_str());
  return 0;
}

}  // namespace

Command add_backends_command(CLI::App& root) {
  auto opts = std::make_shared<BackendsOptions>();
  CLI::App* app = root.add_subcommand("backends", "List the attention backends: availability, platform default, "
                                                  "dtypes, head dims, masks and extra keys");
  app->add_option("--device", opts->device, "Device to report on: cpu or cuda")->capture_default_str();
  app->add_option("--shape", opts->shape,
                  "Problem size B,Sq,Sk,H,D that availability and the platform default are decided for "
                  "(default: Wan2.2-5B self-attention, 1,11440,11440,24,128)");
  app->add_flag("--json", opts->json, "Print one JSON array, one object per backend");
  return {app, false, [opts](const CommandContext&) { return run_backends(*opts); }};
}

}  // namespace dattn::tool
