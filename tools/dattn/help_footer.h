#pragma once
// The end of `dattn --help`: where to read more, then two commands to try from a clone of dattn (the
// first makes a small random-weight Wan pipeline as `make demo` does, the second generates with it).
// tests/cli/test_cli_commands.cc runs these two lines as printed.
namespace dattn::tool {

inline constexpr const char* kHelpFooter =
    "Run 'dattn <command> --help' for a command's options. Attention configuration flags are\n"
    "described there and in the README (section 'Choosing attention backends'). --model takes a\n"
    "pipeline folder or a Hugging Face id (ORG/NAME) already in the local Hugging Face cache.\n"
    "\n"
    "Try it from a clone of dattn: make a small Wan pipeline with random weights (so the video is\n"
    "structured noise), then generate a video with it (on a GPU when one is visible, else the CPU):\n"
    "  dattn make-pipeline --out demo-model --transformer-config scripts/demo-model/transformer.json "
    "--vae-config scripts/demo-model/vae.json --text-encoder-config scripts/demo-model/text_encoder.json "
    "--tokenizer tests/golden/wan_tiny/pipeline/tokenizer "
    "--scheduler-config tests/golden/wan_tiny/pipeline/scheduler/scheduler_config.json\n"
    "  dattn generate --model demo-model --prompt \"A red fox trotting through fresh snow at dawn\" "
    "--height 128 --width 192 --num-frames 9 --num-inference-steps 4 --output fox.mp4";

}  // namespace dattn::tool
