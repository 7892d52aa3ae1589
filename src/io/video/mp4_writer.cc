// H.264 in mp4 through libavformat + libavcodec. RGB is converted to BT.709 limited-range yuv420p by
// libswscale and the stream is tagged BT.709, so that players decode the colours that were encoded.
extern "C" {
#include <libavutil/log.h>
#include <libavutil/opt.h>
}

#include <cstring>
#include <mutex>

#include "dattn/core/error.h"
#include "io/video/av_util.h"
#include "io/video/encoders.h"

namespace dattn::video_detail {
namespace {

// The muxer owns the output file: closing it here on every path, success or error.
struct OutputFree {
  void operator()(AVFormatContext* oc) const {
    if (oc->pb) avio_closep(&oc->pb);
    avformat_free_context(oc);
  }
};
using OutputPtr = std::unique_ptr<AVFormatContext, OutputFree>;

// Full-resolution chroma input: without it libswscale's RGB -> yuv420p darkens by about one level.
constexpr int kSwsFlags = SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INP | SWS_FULL_CHR_H_INT;

// Sends `frame` (nullptr to flush) and writes every packet the encoder has ready.
void encode(AVCodecContext* ctx, AVFrame* frame, AVFormatContext* oc, AVStream* st, const std::string& path) {
  av::check(avcodec_send_frame(ctx, frame), path + ": H.264 encoding");
  av::PacketPtr packet(av_packet_alloc());
  while (true) {
    const int err = avcodec_receive_packet(ctx, packet.get());
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return;
    av::check(err, path + ": H.264 encoding");
    av_packet_rescale_ts(packet.get(), ctx->time_base, st->time_base);
    packet->stream_index = st->index;
    av::check(av_interleaved_write_frame(oc, packet.get()), path + ": writing mp4");
  }
}

}  // namespace

void write_mp4(const std::string& path, const std::vector<std::uint8_t>& rgb, const FrameGeometry& g,
               const VideoWriteOptions& options) {
  // x264 prints statistics at FFmpeg's default log level; keep only errors (a process-wide setting).
  static std::once_flag quiet;
  std::call_once(quiet, [] { av_log_set_level(AV_LOG_ERROR); });

  const AVCodec* codec = avcodec_find_encoder_by_name(options.h264_encoder.c_str());
  if (!codec) throw UserError(path + ": this FFmpeg has no encoder '" + options.h264_encoder + "' for H.264");
  AVFormatContext* raw = nullptr;
  av::check(avformat_alloc_output_context2(&raw, nullptr, "mp4", path.c_str()), path + ": creating the mp4 muxer");
  OutputPtr oc(raw);
  AVStream* st = avformat_new_stream(oc.get(), nullptr);
  if (!st) throw std::bad_alloc();

  av::CodecContextPtr ctx(avcodec_alloc_context3(codec));
  if (!ctx) throw std::bad_alloc();
  ctx->width = static_cast<int>(g.width);
  ctx->height = static_cast<int>(g.height);
  ctx->pix_fmt = AV_PIX_FMT_YUV420P;
  ctx->time_base = AVRational{1, options.fps};
  ctx->framerate = AVRational{options.fps, 1};
  ctx->color_range = AVCOL_RANGE_MPEG;
  ctx->colorspace = AVCOL_SPC_BT709;
  ctx->color_primaries = AVCOL_PRI_BT709;
  ctx->color_trc = AVCOL_TRC_BT709;
  if (oc->oformat->flags & AVFMT_GLOBALHEADER) ctx->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  AVDictionary* opts = nullptr;
  if (options.h264_encoder == "libx264") {
    av_dict_set(&opts, "crf", std::to_string(options.crf).c_str(), 0);
    av_dict_set(&opts, "preset", "medium", 0);
  }
  const int opened = avcodec_open2(ctx.get(), codec, &opts);
  av_dict_free(&opts);
  av::check(opened, path + ": opening the H.264 encoder '" + options.h264_encoder + "'");
  av::check(avcodec_parameters_from_context(st->codecpar, ctx.get()), path + ": stream parameters");
  st->time_base = ctx->time_base;
  st->avg_frame_rate = ctx->framerate;

  av::check(avio_open(&oc->pb, path.c_str(), AVIO_FLAG_WRITE), path + ": opening for writing");
  av::check(avformat_write_header(oc.get(), nullptr), path + ": writing the mp4 header");

  av::SwsPtr sws(sws_getContext(ctx->width, ctx->height, AV_PIX_FMT_RGB24, ctx->width, ctx->height,
                                AV_PIX_FMT_YUV420P, kSwsFlags, nullptr, nullptr, nullptr));
  if (!sws) throw std::runtime_error(path + ": no RGB to yuv420p conversion in this libswscale");
  // Source RGB is full range; destination BT.709 limited range.
  sws_setColorspaceDetails(sws.get(), sws_getCoefficients(SWS_CS_DEFAULT), 1, sws_getCoefficients(SWS_CS_ITU709), 0,
                           0, 1 << 16, 1 << 16);

  const std::size_t frame_bytes = static_cast<std::size_t>(g.height * g.width * 3);
  for (std::int64_t f = 0; f < g.frames; ++f) {
    av::FramePtr frame(av_frame_alloc());
    frame->format = AV_PIX_FMT_YUV420P;
    frame->width = ctx->width;
    frame->height = ctx->height;
    frame->color_range = AVCOL_RANGE_MPEG;
    frame->colorspace = AVCOL_SPC_BT709;
    av::check(av_frame_get_buffer(frame.get(), 0), path + ": allocating a frame");
    const std::uint8_t* src[1] = {rgb.data() + f * frame_bytes};
    const int src_stride[1] = {ctx->width * 3};
    sws_scale(sws.get(), src, src_stride, 0, ctx->height, frame->data, frame->linesize);
    frame->pts = f;
    encode(ctx.get(), frame.get(), oc.get(), st, path);
  }
  encode(ctx.get(), nullptr, oc.get(), st, path);
  av::check(av_write_trailer(oc.get()), path + ": finishing the mp4");
}

}  // namespace dattn::video_detail
