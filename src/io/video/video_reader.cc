// Decoding through libavformat / libavcodec, frames converted to RGB24 by libswscale (copied as they
// are when already RGB24, so that lossless formats read back exactly).
#include "dattn/io/video_reader.h"

#include <cstring>

#include "dattn/core/error.h"
#include "dattn/core/files.h"
#include "io/video/av_util.h"

namespace dattn {
namespace {

struct InputClose {
  void operator()(AVFormatContext* fc) const { avformat_close_input(&fc); }
};

// Full-resolution chroma interpolation: without it yuv420p -> RGB is biased by about one level.
constexpr int kSwsFlags = SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INP | SWS_FULL_CHR_H_INT;

int sws_matrix(AVColorSpace cs) {
  switch (cs) {
    case AVCOL_SPC_BT709: return SWS_CS_ITU709;
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL: return SWS_CS_BT2020;
    case AVCOL_SPC_SMPTE240M: return SWS_CS_SMPTE240M;
    default: return SWS_CS_DEFAULT;  // BT.601, what untagged streams usually mean
  }
}

void append_rgb(const AVFrame* frame, DecodedVideo& out, const std::string& path) {
  if (out.frames == 0) {
    out.height = frame->height;
    out.width = frame->width;
  } else if (frame->height != out.height || frame->width != out.width) {
    throw std::runtime_error(path + ": frame size changes inside the stream");
  }
  const std::size_t row = static_cast<std::size_t>(frame->width) * 3;
  const std::size_t offset = out.rgb.size();
  out.rgb.resize(offset + row * frame->height);
  std::uint8_t* dst = out.rgb.data() + offset;
  if (frame->format == AV_PIX_FMT_RGB24) {
    for (int y = 0; y < frame->height; ++y) std::memcpy(dst + y * row, frame->data[0] + y * frame->linesize[0], row);
  } else {
    av::SwsPtr sws(sws_getContext(frame->width, frame->height, static_cast<AVPixelFormat>(frame->format), frame->width,
                                  frame->height, AV_PIX_FMT_RGB24, kSwsFlags, nullptr, nullptr, nullptr));
    if (!sws) throw std::runtime_error(path + ": cannot convert its pixel format to RGB");
    const int* coeffs = sws_getCoefficients(sws_matrix(frame->colorspace));
    sws_setColorspaceDetails(sws.get(), coeffs, frame->color_range == AVCOL_RANGE_JPEG ? 1 : 0, coeffs, 1, 0, 1 << 16,
                             1 << 16);
    std::uint8_t* planes[1] = {dst};
    const int strides[1] = {static_cast<int>(row)};
    sws_scale(sws.get(), frame->data, frame->linesize, 0, frame->height, planes, strides);
  }
  ++out.frames;
}

void drain(AVCodecContext* ctx, AVFrame* frame, DecodedVideo& out, const std::string& path) {
  while (true) {
    const int err = avcodec_receive_frame(ctx, frame);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return;
    av::check(err, path + ": decoding");
    append_rgb(frame, out, path);
    av_frame_unref(frame);
  }
}

}  // namespace

DecodedVideo read_video_rgb(const std::string& path) {
  require_regular_file(path, "video");  // FFmpeg would block on a FIFO
  AVFormatContext* raw = nullptr;
  if (int err = avformat_open_input(&raw, path.c_str(), nullptr, nullptr); err < 0)
    throw UserError(path + ": cannot open as video or image: " + av::error_text(err));
  std::unique_ptr<AVFormatContext, InputClose> fc(raw);
  av::check(avformat_find_stream_info(fc.get(), nullptr), path + ": reading stream information");
  const AVCodec* decoder = nullptr;
  const int index = av_find_best_stream(fc.get(), AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0);
  if (index < 0 || !decoder) throw UserError(path + ": no decodable video stream: " + av::error_text(index));
  const AVStream* st = fc->streams[index];

  av::CodecContextPtr ctx(avcodec_alloc_context3(decoder));
  if (!ctx) throw std::bad_alloc();
  av::check(avcodec_parameters_to_context(ctx.get(), st->codecpar), path + ": decoder parameters");
  av::check(avcodec_open2(ctx.get(), decoder, nullptr), path + ": opening the decoder");

  DecodedVideo out;
  out.codec = decoder->name;
  if (st->avg_frame_rate.num > 0 && st->avg_frame_rate.den > 0) out.fps = av_q2d(st->avg_frame_rate);
  av::PacketPtr packet(av_packet_alloc());
  av::FramePtr frame(av_frame_alloc());
  while (av_read_frame(fc.get(), packet.get()) >= 0) {
    if (packet->stream_index == index) {
      const int err = avcodec_send_packet(ctx.get(), packet.get());
      av_packet_unref(packet.get());
      av::check(err, path + ": decoding");
      drain(ctx.get(), frame.get(), out, path);
    } else {
      av_packet_unref(packet.get());
    }
  }
  av::check(avcodec_send_packet(ctx.get(), nullptr), path + ": decoding");
  drain(ctx.get(), frame.get(), out, path);
  return out;
}

}  // namespace dattn
