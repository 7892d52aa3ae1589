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

struct Mp4Stream::State {
  std::string path;
  OutputPtr oc;
  AVStream* st = nullptr;
  av::CodecContextPtr ctx;
  av::SwsPtr sws;
  std::int64_t next_pts = 0;
};

Mp4Stream::Mp4Stream(const std::string& path, const FrameGeometry& g, const VideoWriteOptions& options)
    : state_(std::make_unique<State>()) {
  // x264 prints statistics at FFmpeg's default log level; keep only errors (a process-wide setting).
  static std::once_flag quiet;
  std::call_once(quiet, [] { av_log_set_level(AV_LOG_ERROR); });
  State& s = *state_;
  s.path = path;

  const AVCodec* codec = avcodec_find_encoder_by_name(options.h264_encoder.c_str());
  if (!codec) throw UserError(path + ": this FFmpeg has no encoder '" + options.h264_encoder + "' for H.264");
  AVFormatContext* raw = nullptr;
  av::check(avformat_alloc_output_context2(&raw, nullptr, "mp4", path.c_str()), path + ": creating the mp4 muxer");
  s.oc.reset(raw);
  s.st = avformat_new_stream(s.oc.get(), nullptr);
  if (!s.st) throw std::bad_alloc();

  s.ctx.reset(avcodec_alloc_context3(codec));
  if (!s.ctx) throw std::bad_alloc();
  AVCodecContext* ctx = s.ctx.get();
  ctx->width = static_cast<int>(g.width);
  ctx->height = static_cast<int>(g.height);
  ctx->pix_fmt = AV_PIX_FMT_YUV420P;
  ctx->time_base = AVRational{1, options.fps};
  ctx->framerate = AVRational{options.fps, 1};
  ctx->color_range = AVCOL_RANGE_MPEG;
  ctx->colorspace = AVCOL_SPC_BT709;
  ctx->color_primaries = AVCOL_PRI_BT709;
  ctx->color_trc = AVCOL_TRC_BT709;
  if (s.oc->oformat->flags & AVFMT_GLOBALHEADER) ctx->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  AVDictionary* opts = nullptr;
  if (options.h264_encoder == "libx264") {
    av_dict_set(&opts, "crf", std::to_string(options.crf).c_str(), 0);
    av_dict_set(&opts, "preset", "medium", 0);
  }
  const int opened = avcodec_open2(ctx, codec, &opts);
  av_dict_free(&opts);
  av::check(opened, path + ": opening the H.264 encoder '" + options.h264_encoder + "'");
  av::check(avcodec_parameters_from_context(s.st->codecpar, ctx), path + ": stream parameters");
  s.st->time_base = ctx->time_base;
  s.st->avg_frame_rate = ctx->framerate;

  av::check(avio_open(&s.oc->pb, path.c_str(), AVIO_FLAG_WRITE), path + ": opening for writing");
  av::check(avformat_write_header(s.oc.get(), nullptr), path + ": writing the mp4 header");

  s.sws.reset(sws_getContext(ctx->width, ctx->height, AV_PIX_FMT_RGB24, ctx->width, ctx->height, AV_PIX_FMT_YUV420P,
                             kSwsFlags, nullptr, nullptr, nullptr));
  if (!s.sws) throw std::runtime_error(path + ": no RGB to yuv420p conversion in this libswscale");
  // Source RGB is full range; destination BT.709 limited range.
  sws_setColorspaceDetails(s.sws.get(), sws_getCoefficients(SWS_CS_DEFAULT), 1, sws_getCoefficients(SWS_CS_ITU709),
                           0, 0, 1 << 16, 1 << 16);
}

Mp4Stream::~Mp4Stream() = default;

void Mp4Stream::add_frame(const std::uint8_t* rgb) {
  State& s = *state_;
  AVCodecContext* ctx = s.ctx.get();
  av::FramePtr frame(av_frame_alloc());
  if (!frame) throw std::bad_alloc();
  frame->format = AV_PIX_FMT_YUV420P;
  frame->width = ctx->width;
  frame->height = ctx->height;
  frame->color_range = AVCOL_RANGE_MPEG;
  frame->colorspace = AVCOL_SPC_BT709;
  av::check(av_frame_get_buffer(frame.get(), 0), s.path + ": allocating a frame");
  const std::uint8_t* src[1] = {rgb};
  const int src_stride[1] = {ctx->width * 3};
  sws_scale(s.sws.get(), src, src_stride, 0, ctx->height, frame->data, frame->linesize);
  frame->pts = s.next_pts++;
  encode(ctx, frame.get(), s.oc.get(), s.st, s.path);
}

void Mp4Stream::finish() {
  State& s = *state_;
  encode(s.ctx.get(), nullptr, s.oc.get(), s.st, s.path);
  av::check(av_write_trailer(s.oc.get()), s.path + ": finishing the mp4");
}

}  // namespace dattn::video_detail
