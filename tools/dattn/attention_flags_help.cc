// The attention configuration flags in --help. They are taken off the command line before CLI11 parses
// it (dotted paths are open-ended), so these options exist only to document them.
#include "dattn/command.h"

namespace dattn::tool {

void document_attention_flags(CLI::App& app) {
  const char* group = "Attention configuration";
  app.add_option("--diffusion-attention-backend", "Default backend for every attention layer (shorthand for "
                 "--diffusion-attention-config.default.backend): FLASH_ATTN, TORCH_SDPA, SAGE_ATTN, "
                 "SPARSE_BLOCK or auto")
      ->group(group)->type_name("NAME");
  app.add_option("--diffusion-attention-config", "Whole attention config as JSON (short: -dac JSON): "
                 "{\"default\": SPEC, \"per_role\": {ROLE: SPEC}}, SPEC = NAME or {\"backend\": NAME, \"extra\": {...}}")
      ->group(group)->type_name("JSON");
  app.add_option("--diffusion-attention-config.default.backend", "Default backend (dotted form)")
      ->group(group)->type_name("NAME");
  app.add_option("--diffusion-attention-config.default.extra.KEY", "An extra parameter of the default backend "
                 "(VALUE decoded as JSON when it parses, else a string)")
      ->group(group)->type_name("VALUE");
  app.add_option("--diffusion-attention-config.per_role.ROLE.backend", "Backend for one role or role category "
                 "(self, cross, or a model role such as ltx2.audio_to_video)")
      ->group(group)->type_name("NAME");
  app.add_option("--diffusion-attention-config.per_role.ROLE.extra.KEY", "An extra parameter for one role's backend")
      ->group(group)->type_name("VALUE");
  app.footer(
      "Attention backends resolve per role: per_role[role], then per_role[category], then the default\n"
      "(--diffusion-attention-backend or the config), then DIFFUSION_ATTENTION_BACKEND, then the platform\n"
      "default (FLASH_ATTN where it can run the problem, else TORCH_SDPA). The JSON blob is applied first,\n"
      "dotted flags on top. 'dattn backends' lists each backend's extra keys.");
}

}  // namespace dattn::tool
