// PNG through libavcodec: the png encoder turns one RGB24 frame into one packet that is the whole file.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "dattn/core/error.h"
#include "io/video/av_util.h"
#include "io/video/encoders.h"

namespace dattn::video_detail {

void write_png(const std::string& path, const std::uint8_t* rgb, std::int64_t height, std::int64_t width) {
  const AVCodec* codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
  if (!codec) throw UserError(path + ": this FFmpeg has no png encoder");
  av::CodecContextPtr ctx(avcodec_alloc_context3(codec));
  if (!ctx) throw std::bad_alloc();
  ctx->width = static_cast<int>(width);
  ctx->height = static_cast<int>(height);
  ctx->pix_fmt = AV_PIX_FMT_RGB24;
  ctx->time_base = AVRational{1, 1};
  av::check(avcodec_open2(ctx.get(), codec, nullptr), path + ": opening the png encoder");

  av::FramePtr frame(av_frame_alloc());
  frame->format = AV_PIX_FMT_RGB24;
  frame->width = ctx->width;
  frame->height = ctx->height;
  av::check(av_frame_get_buffer(frame.get(), 0), path + ": allocating a frame");
  const std::size_t row = static_cast<std::size_t>(width) * 3;
  for (std::int64_t y = 0; y < height; ++y)
    std::memcpy(frame->data[0] + y * frame->linesize[0], rgb + y * row, row);

  av::PacketPtr packet(av_packet_alloc());
  av::check(avcodec_send_frame(ctx.get(), frame.get()), path + ": encoding png");
  av::check(avcodec_send_frame(ctx.get(), nullptr), path + ": finishing png");
  av::check(avcodec_receive_packet(ctx.get(), packet.get()), path + ": encoding png");

  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw UserError(path + ": cannot open for writing: " + std::strerror(errno));
  const bool ok = std::fwrite(packet->data, 1, static_cast<std::size_t>(packet->size), f) ==
                  static_cast<std::size_t>(packet->size);
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error(path + ": write failed (disk full?)");
}

}  // namespace dattn::video_detail
