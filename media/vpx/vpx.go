// Package vpx is replenish's VP8 encoder and decoder: libvpx through cgo. The
// encoder is set up for low latency (realtime deadline, good-quality at the
// smallest sizes; no lag, CBR, no frame dropping, error resilient, keyframes
// only on request), takes new targets from the next frame on, and can make
// three temporal layers (media.L1T3). It is the one package of replenish that
// needs cgo and libvpx; everything else names encoders through the types in
// package media and the interface package sender defines.
package vpx

/*
#cgo pkg-config: vpx
#include <stdlib.h>
#include <string.h>
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

typedef struct {
	vpx_codec_ctx_t ctx;
	vpx_codec_enc_cfg_t cfg;
	vpx_codec_iter_t iter;
	unsigned long deadline;
	int live;
} rp_enc;

// L1T3 (three temporal layers): the cumulative share of the target each
// layer's rate control aims at, in percent (TL0 25, TL0+TL1 50, all 100),
// and the period of layer ids libvpx is told of, as in libvpx's
// vpx_temporal_svc_encoder example (mode 6). The encoder sets the layer of
// each frame itself (VP8E_SET_TEMPORAL_LAYER_ID), restarting the period at
// keyframes. Each layer gets the share of its frames (a quarter, a
// quarter, a half), so every frame is about the average: the 40/60/100
// split of libvpx's example and libwebrtc makes a TL0 frame 1.6 times the
// average, which on a link the stream fills takes 1.6 frame intervals to
// cross and holds the frames after it behind it (capture to received 8 to
// 14 ms longer at the median, measured; README, "Temporal layers").
static const unsigned rp_l1t3_pct[3] = {25, 50, 100};
static const unsigned rp_l1t3_ids[4] = {0, 2, 1, 2};

// rp_set_layer_rates splits kbps between the temporal layers, if any.
static void rp_set_layer_rates(vpx_codec_enc_cfg_t *c, unsigned kbps) {
	if (c->ts_number_layers != 3) return;
	for (int i = 0; i < 3; i++) {
		c->ts_target_bitrate[i] = kbps * rp_l1t3_pct[i] / 100;
		if (i > 0 && c->ts_target_bitrate[i] <= c->ts_target_bitrate[i-1]) {
			c->ts_target_bitrate[i] = c->ts_target_bitrate[i-1] + 1; // libvpx wants them increasing
		}
	}
}

// rp_layer_flags returns the encode flags of an L1T3 delta frame of layer
// tid, a layer sync frame if sync: which of libvpx's three reference
// buffers it may reference and update. LAST holds the latest TL0 frame
// and GF the latest TL1 frame; ARF is not used. TL0 references and
// updates LAST only; TL1 references LAST and updates GF; TL2 updates
// nothing and references LAST, and GF as well unless it is a sync frame.
// So every frame references only frames of its own layer or lower ones,
// the sync frames only TL0, no frame above TL0 anything older than the
// latest TL0 frame, and nothing references a TL2 frame. (The example's
// mode 6 lets TL1 and TL2 frames reference their layer's frames of earlier
// periods through GF and ARF: then only a keyframe would let a receiver
// that missed some take a layer up again.) Upper layers leave the entropy
// context alone (error resilient mode already resets it after every
// frame).
static vpx_enc_frame_flags_t rp_layer_flags(int tid, int sync) {
	vpx_enc_frame_flags_t f = VP8_EFLAG_NO_REF_ARF | VP8_EFLAG_NO_UPD_ARF;
	switch (tid) {
	case 0:
		return f | VP8_EFLAG_NO_REF_GF | VP8_EFLAG_NO_UPD_GF;
	case 1:
		return f | VP8_EFLAG_NO_REF_GF | VP8_EFLAG_NO_UPD_LAST | VP8_EFLAG_NO_UPD_ENTROPY;
	default:
		f |= VP8_EFLAG_NO_UPD_LAST | VP8_EFLAG_NO_UPD_GF | VP8_EFLAG_NO_UPD_ENTROPY;
		return sync ? f | VP8_EFLAG_NO_REF_GF : f;
	}
}

// rp_enc_init sets up a VP8 CBR encoder, with three temporal layers if
// layers is 3, to encode with the realtime deadline, or the good-quality
// one if good is set (see recodes). It returns a libvpx error
// code; on failure nothing needs destroying.
static vpx_codec_err_t rp_enc_init(rp_enc *e, int w, int h, unsigned kbps,
		int threads, int cpu_used, unsigned max_intra_pct, int layers, int good) {
	e->deadline = good ? VPX_DL_GOOD_QUALITY : VPX_DL_REALTIME;
	vpx_codec_err_t err = vpx_codec_enc_config_default(vpx_codec_vp8_cx(), &e->cfg, 0);
	if (err != VPX_CODEC_OK) return err;
	vpx_codec_enc_cfg_t *c = &e->cfg;
	c->g_w = w;
	c->g_h = h;
	c->g_timebase.num = 1;
	c->g_timebase.den = 1000000; // microseconds
	c->g_threads = threads;
	c->g_pass = VPX_RC_ONE_PASS;
	c->g_lag_in_frames = 0;
	c->g_error_resilient = VPX_ERROR_RESILIENT_DEFAULT;
	c->rc_end_usage = VPX_CBR;
	c->rc_target_bitrate = kbps;
	c->rc_dropframe_thresh = 0;
	c->rc_resize_allowed = 0;
	c->rc_min_quantizer = 2;
	c->rc_max_quantizer = 63;
	c->rc_undershoot_pct = 100;
	c->rc_overshoot_pct = 15;
	c->rc_buf_sz = 1000;
	c->rc_buf_initial_sz = 500;
	c->rc_buf_optimal_sz = 600;
	c->kf_mode = VPX_KF_DISABLED;
	c->kf_min_dist = 0;
	c->kf_max_dist = 0x7fffffff;
	if (layers == 3) {
		c->ts_number_layers = 3;
		c->ts_periodicity = 4;
		memcpy(c->ts_layer_id, rp_l1t3_ids, sizeof rp_l1t3_ids);
		c->ts_rate_decimator[0] = 4;
		c->ts_rate_decimator[1] = 2;
		c->ts_rate_decimator[2] = 1;
		rp_set_layer_rates(c, kbps);
	}
	err = vpx_codec_enc_init(&e->ctx, vpx_codec_vp8_cx(), c, 0);
	if (err != VPX_CODEC_OK) return err;
	e->live = 1;
	if ((err = vpx_codec_control(&e->ctx, VP8E_SET_CPUUSED, cpu_used)) != VPX_CODEC_OK ||
	    (err = vpx_codec_control(&e->ctx, VP8E_SET_MAX_INTRA_BITRATE_PCT, max_intra_pct)) != VPX_CODEC_OK ||
	    (err = vpx_codec_control(&e->ctx, VP8E_SET_NOISE_SENSITIVITY, 0)) != VPX_CODEC_OK ||
	    (err = vpx_codec_control(&e->ctx, VP8E_SET_STATIC_THRESHOLD, 0)) != VPX_CODEC_OK ||
	    (err = vpx_codec_control(&e->ctx, VP8E_SET_TOKEN_PARTITIONS,
	        threads > 1 ? VP8_TWO_TOKENPARTITION : VP8_ONE_TOKENPARTITION)) != VPX_CODEC_OK) {
		return err;
	}
	return VPX_CODEC_OK;
}

static void rp_enc_destroy(rp_enc *e) {
	if (e->live) vpx_codec_destroy(&e->ctx);
	e->live = 0;
}

// rp_enc_set_bitrate sets a new target and, if reset is set, puts the
// rate-control buffer of every temporal layer back at a level at the new
// target: the starting level, or the optimal one if optimal is set.
// libvpx keeps a buffer level in bits across a change of target: with one
// layer it clips the level to the new maximum (vp8_change_config), which
// after a deep cut still leaves the maximum's surplus over the optimal
// level to spend; with temporal layers it does not touch the levels each
// layer saved (vp8_update_layer_contexts), so after a deep cut a layer's
// next frame spends as if at the old rate. libvpx resets the levels of the
// layers that survive a change in the number of layers to the starting
// level and keeps what they have learnt (rate-correction factors,
// quantizer history; vp8_reset_temporal_layer_change): adding a layer and
// taking it away again is such a change, and the added layer never
// encodes a frame.
static vpx_codec_err_t rp_enc_set_bitrate(rp_enc *e, unsigned kbps, int reset, int optimal) {
	e->cfg.rc_target_bitrate = kbps;
	rp_set_layer_rates(&e->cfg, kbps);
	if (!reset) return vpx_codec_enc_config_set(&e->ctx, &e->cfg);
	unsigned initial = e->cfg.rc_buf_initial_sz;
	if (optimal) e->cfg.rc_buf_initial_sz = e->cfg.rc_buf_optimal_sz;
	vpx_codec_enc_cfg_t c = e->cfg;
	unsigned n = c.ts_number_layers + 1;
	c.ts_number_layers = n;
	if (n == 2) { // from one layer: a valid two-layer split
		c.ts_periodicity = 1;
		c.ts_layer_id[0] = 0;
		c.ts_target_bitrate[0] = kbps / 2;
	}
	c.ts_target_bitrate[n - 1] = kbps + 1;
	for (unsigned i = 0; i < n; i++) c.ts_rate_decimator[i] = 1u << (n - 1 - i);
	vpx_codec_err_t err = vpx_codec_enc_config_set(&e->ctx, &c);
	if (err == VPX_CODEC_OK) err = vpx_codec_enc_config_set(&e->ctx, &e->cfg);
	e->cfg.rc_buf_initial_sz = initial;
	return err;
}

// rp_enc_encode encodes one I420 picture whose planes are given by pointer,
// as a keyframe if force_key is set, else in temporal layer tid (a sync
// frame if sync) when the encoder has layers. The planes are read during
// the call only (libvpx copies the picture into its own lookahead buffer).
static vpx_codec_err_t rp_enc_encode(rp_enc *e, unsigned char *y, unsigned char *u,
		unsigned char *v, int64_t pts, unsigned long duration, int force_key,
		int tid, int sync) {
	vpx_enc_frame_flags_t flags = force_key ? VPX_EFLAG_FORCE_KF : 0;
	if (e->cfg.ts_number_layers > 1) {
		vpx_codec_err_t err = vpx_codec_control(&e->ctx, VP8E_SET_TEMPORAL_LAYER_ID, tid);
		if (err != VPX_CODEC_OK) return err;
		if (!force_key) flags = rp_layer_flags(tid, sync);
	}
	vpx_image_t img;
	if (!vpx_img_wrap(&img, VPX_IMG_FMT_I420, e->cfg.g_w, e->cfg.g_h, 1, y)) {
		return VPX_CODEC_INVALID_PARAM;
	}
	img.planes[VPX_PLANE_Y] = y;
	img.planes[VPX_PLANE_U] = u;
	img.planes[VPX_PLANE_V] = v;
	img.stride[VPX_PLANE_Y] = e->cfg.g_w;
	img.stride[VPX_PLANE_U] = e->cfg.g_w / 2;
	img.stride[VPX_PLANE_V] = e->cfg.g_w / 2;
	e->iter = NULL;
	return vpx_codec_encode(&e->ctx, &img, pts, duration, flags, e->deadline);
}

// rp_enc_next returns 1 and the next compressed frame of the last encode
// call, or 0 when there is none.
static int rp_enc_next(rp_enc *e, const void **buf, size_t *sz, int *key) {
	const vpx_codec_cx_pkt_t *pkt;
	while ((pkt = vpx_codec_get_cx_data(&e->ctx, &e->iter)) != NULL) {
		if (pkt->kind != VPX_CODEC_CX_FRAME_PKT) continue;
		*buf = pkt->data.frame.buf;
		*sz = pkt->data.frame.sz;
		*key = (pkt->data.frame.flags & VPX_FRAME_IS_KEY) != 0;
		return 1;
	}
	return 0;
}

typedef struct {
	vpx_codec_ctx_t ctx;
	unsigned char *buf;
	size_t cap;
	int live;
} rp_dec;

static vpx_codec_err_t rp_dec_init(rp_dec *d) {
	vpx_codec_dec_cfg_t cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.threads = 1;
	vpx_codec_err_t err = vpx_codec_dec_init(&d->ctx, vpx_codec_vp8_dx(), &cfg, 0);
	if (err == VPX_CODEC_OK) d->live = 1;
	return err;
}

static void rp_dec_destroy(rp_dec *d) {
	if (d->live) vpx_codec_destroy(&d->ctx);
	d->live = 0;
	free(d->buf);
	d->buf = NULL;
	d->cap = 0;
}

// rp_dec_decode copies data into the decoder's own buffer, so that libvpx
// never sees Go memory, and decodes it. It returns the decoded picture or
// NULL with *err set.
static vpx_image_t *rp_dec_decode(rp_dec *d, const void *data, size_t n, vpx_codec_err_t *err) {
	if (n > d->cap) {
		unsigned char *b = realloc(d->buf, n);
		if (b == NULL) {
			*err = VPX_CODEC_MEM_ERROR;
			return NULL;
		}
		d->buf = b;
		d->cap = n;
	}
	memcpy(d->buf, data, n);
	*err = vpx_codec_decode(&d->ctx, d->buf, (unsigned int)n, NULL, 0);
	if (*err != VPX_CODEC_OK) return NULL;
	vpx_codec_iter_t iter = NULL;
	vpx_image_t *img = vpx_codec_get_frame(&d->ctx, &iter);
	if (img == NULL) *err = VPX_CODEC_CORRUPT_FRAME;
	return img;
}

// rp_dec_refs reports which reference buffers (VP8_LAST_FRAME,
// VP8_GOLD_FRAME, VP8_ALTR_FRAME bits) the last decoded frame used and
// which it updated.
static vpx_codec_err_t rp_dec_refs(rp_dec *d, int *used, int *updated) {
	vpx_codec_err_t err = vpx_codec_control(&d->ctx, VP8D_GET_LAST_REF_USED, used);
	if (err != VPX_CODEC_OK) return err;
	return vpx_codec_control(&d->ctx, VP8D_GET_LAST_REF_UPDATES, updated);
}

static int rp_enc_last_q(rp_enc *e) {
	int q = -1;
	if (vpx_codec_control(&e->ctx, VP8E_GET_LAST_QUANTIZER_64, &q) != VPX_CODEC_OK) return -1;
	return q;
}

static const char *rp_error_detail(vpx_codec_ctx_t *ctx) {
	const char *s = vpx_codec_error_detail(ctx);
	return s ? s : "";
}
*/
import "C"

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"replenish/media"
	"replenish/rate"
)

// Errors returned by the encoder and decoder, besides media.ErrSize,
// media.ErrFrame, media.ErrBitrate and media.ErrClosed.
var (
	// ErrCodec wraps an error reported by libvpx.
	ErrCodec = errors.New("vpx: libvpx error")
	// ErrNoFrame is returned when libvpx produced no compressed frame.
	ErrNoFrame = errors.New("vpx: encoder produced no frame")
)

// Encoder limits.
const (
	// KeyframeMaxPct caps a keyframe's size, in percent of the average
	// frame size at the target bitrate (VP8E_SET_MAX_INTRA_BITRATE_PCT):
	// a keyframe occupies a path for about three frame intervals at most.
	// With L1T3 layers libvpx takes the percentage of TL0's average
	// frame, which the layers' split (rp_l1t3_pct) makes the stream's.
	KeyframeMaxPct = 300
)

// Config holds the libvpx settings of an Encoder beyond
// media.EncoderConfig. Zero values mean the defaults.
type Config struct {
	Threads int // encoder threads; 0 means 1
	CPUUsed int // libvpx cpu-used, negative for a fixed speed; 0 means -8
}

// Encoder is a VP8 encoder (libvpx) configured for low-latency CBR: realtime
// deadline (good-quality at the lowest rung's size), no lag, no frame dropping,
// error resilient, keyframes only on request, at the first frame and after a
// size change. With media.EncoderConfig.Scalability L1T3 it makes three
// temporal layers (media.Layering's pattern, restarted at every keyframe;
// libvpx's rate control gives TL0 25% of the target, TL1 25% and TL2 50%) and
// reports each frame's layer in EncodedFrame.Layer. An Encoder is not safe
// for concurrent use.
type Encoder struct {
	c       *C.rp_enc // C memory; nil after Close
	size    media.Size
	bitrate rate.Bitrate
	lib     Config
	layers  media.Layering // the temporal pattern; kept across re-initialisations

	levelRate rate.Bitrate  // the target the rate-control buffer's levels were last set at
	started   bool          // a frame has been encoded since the last init
	end       time.Duration // end of the previous frame on the encoder's timeline
	nominal   time.Duration // 1/FPS
}

// NewEncoder returns an encoder for cfg with the default libvpx settings
// (Config's zero value). It returns an error wrapping media.ErrSize,
// media.ErrBitrate or ErrCodec if the configuration is unusable.
func NewEncoder(cfg media.EncoderConfig) (*Encoder, error) { return Config{}.NewEncoder(cfg) }

// NewEncoder returns an encoder for cfg with c's libvpx settings. It returns
// an error wrapping media.ErrSize, media.ErrBitrate, media.ErrScalability
// or ErrCodec if the configuration is unusable.
func (c Config) NewEncoder(cfg media.EncoderConfig) (*Encoder, error) {
	if err := cfg.Size.Check(); err != nil {
		return nil, err
	}
	if err := cfg.Scalability.Check(); err != nil {
		return nil, err
	}
	if cfg.FPS <= 0 {
		cfg.FPS = 30
	}
	if c.Threads <= 0 {
		c.Threads = 1
	}
	if c.CPUUsed == 0 {
		c.CPUUsed = -8
	}
	if cfg.Bitrate == 0 {
		cfg.Bitrate = media.RungOf(cfg.Size).Default()
	}
	if err := media.CheckBitrate(cfg.Bitrate); err != nil {
		return nil, err
	}
	e := &Encoder{
		c:       (*C.rp_enc)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rp_enc{})))),
		bitrate: cfg.Bitrate,
		lib:     c,
		layers:  media.NewLayering(cfg.Scalability),
		nominal: time.Second / time.Duration(cfg.FPS),
	}
	if e.c == nil {
		return nil, fmt.Errorf("%w: out of memory", ErrCodec)
	}
	if err := e.init(cfg.Size); err != nil {
		C.free(unsafe.Pointer(e.c))
		return nil, err
	}
	return e, nil
}

// levelsStale reports whether the rate-control buffer's level, last set at
// the target at, is worth resetting for a change of target from prev to b
// (see rp_enc_set_bitrate), and whether to the optimal level rather than
// the starting one. libvpx holds the level near its optimum (600 ms of the
// target) and carries it over in bits, so at b it reads as 600·at/b ms.
// Past a cut to 0.8 or a raise by 1.25 of at the carried level is far off,
// and so it is after one step down by more than a tenth: after a probe (a
// target rising every frame, followed just below it, so the level rose),
// the ten frames after a cut by a fifth came out at 1.07 to 1.14 of the new
// target and the ten after those at 1.03 to 1.13 (320x180 to 1280x720), and
// the queue the probe had built grew on. A fall resets to the optimal
// level, where the encoder spends its target: the ten frames after such
// cuts came out at 0.99 to 1.05 of it, where the starting level (500 ms, a
// deficit of 100 ms) gave 0.75 to 0.86. A raise resets to the starting
// level: at the optimum, the ten frames after a raise by 1.5 or 2 came out
// at 1.21 to 1.33 of the target, at the starting level at 1.02 to 1.10.
// After 10 s at 1.95 Mb/s, 640x360 (TestLevelReset), the ten frames after a
// cut to 650 kb/s came out at 1.07 and 0.68 of the new target (one layer,
// L1T3; 2.3 and 1.7 without a reset: a cut to a third takes the quantizer
// longer to follow than a reset can help), after a raise from 650 kb/s to
// 1.3 Mb/s at 0.8 and 1.0 (0.5, 0.7). A target moving by less than a tenth
// a step is reset only once it has drifted past the bounds of at.
func levelsStale(at, prev, b rate.Bitrate) (reset, optimal bool) {
	return b*5 < at*4 || b*4 > at*5 || b*10 < prev*9, b < prev
}

// recodes says frames of size sz are encoded with libvpx's good-quality
// deadline instead of the realtime one: those of the lowest rung (160x90) and
// smaller. In that mode libvpx clamps Config's default cpu-used (-8) to -5, a
// speed with its recode loop on: it encodes a frame again when its size
// misses its share of the target, and the frames' sizes vary less: the log
// size's standard deviation from one frame to the next falls from 0.12 to
// 0.09 (L1T3, 15 fps, 85 kb/s; TestRecodeSmallFrames), at an encode of 3.3 ms
// a frame instead of 0.23 ms. On a 100 kb/s link a frame is one packet and 60
// ms of the link, and a frame larger than the last queues the next: the
// controller keeps room for that noise (see sender.Controller's band).
// Measured on five 100 kb/s paths (TCP and QUIC, 20 to 172 ms, three runs
// each a side): utilization 84.1 to 85.4%, the link 94.7 to 96.0% busy,
// capture to received p95 over the floor 57 to 44 ms (median), capture to
// received's median 1.3 ms longer (the encode). At 320x180 the good-quality
// encode takes 8 ms, a quarter of a 30 fps interval, for 0.10 to 0.07: not
// taken.
func recodes(sz media.Size) bool { return sz.Pixels() <= media.Ladder[0].Size.Pixels() }

func kbps(b rate.Bitrate) C.uint { return C.uint((b + rate.Kbps/2) / rate.Kbps) }

// init (re)creates the libvpx encoder for size sz at the current bitrate.
func (e *Encoder) init(sz media.Size) error {
	C.rp_enc_destroy(e.c)
	rc := C.rp_enc_init(e.c, C.int(sz.W), C.int(sz.H), kbps(e.bitrate), C.int(e.lib.Threads),
		C.int(e.lib.CPUUsed), C.uint(KeyframeMaxPct), C.int(e.layers.Mode().Layers()),
		cbool(recodes(sz)))
	if rc != C.VPX_CODEC_OK {
		err := e.codecErr("init", rc)
		C.rp_enc_destroy(e.c)
		return err
	}
	e.size = sz
	e.started = false
	e.levelRate = e.bitrate
	return nil
}

func (e *Encoder) codecErr(op string, rc C.vpx_codec_err_t) error {
	msg := C.GoString(C.vpx_codec_err_to_string(rc))
	if e.c.live != 0 {
		if d := C.GoString(C.rp_error_detail(&e.c.ctx)); d != "" {
			msg += ": " + d
		}
	}
	return fmt.Errorf("%w: %s: %s", ErrCodec, op, msg)
}

// Size returns the picture size the encoder is currently set up for.
func (e *Encoder) Size() media.Size { return e.size }

// Bitrate returns the current target bitrate.
func (e *Encoder) Bitrate() rate.Bitrate { return e.bitrate }

// SetBitrate changes the target bitrate from the next frame on, split
// between temporal layers as at the start. When the target has moved far
// from where the rate-control buffer's level was last set, or has fallen
// by more than a tenth at once (levelsStale), every layer's level is
// reset, so that a surplus or deficit carried over from the old rate is
// not spent on the next frames. It returns an error wrapping
// media.ErrBitrate if b is outside [media.MinBitrate, media.MaxBitrate],
// media.ErrClosed after Close, or ErrCodec if libvpx refuses it.
func (e *Encoder) SetBitrate(b rate.Bitrate) error {
	if e.c == nil {
		return media.ErrClosed
	}
	if err := media.CheckBitrate(b); err != nil {
		return err
	}
	if e.c.live == 0 {
		e.bitrate = b // applied by the next init
		return nil
	}
	reset, optimal := levelsStale(e.levelRate, e.bitrate, b)
	if rc := C.rp_enc_set_bitrate(e.c, kbps(b), cbool(reset), cbool(optimal)); rc != C.VPX_CODEC_OK {
		return e.codecErr("set bitrate", rc)
	}
	if reset {
		e.levelRate = b
	}
	e.bitrate = b
	return nil
}

// Encode compresses f, as a keyframe if forceKey is set, and blocks until
// libvpx returns. If f's size differs from the encoder's, the encoder is
// re-initialised for the new size at the current bitrate and the frame is a
// keyframe. Rate control is told that each frame lasts f.Interval (the
// configured 1/FPS if zero; at most media.MaxFrameInterval), not the gap
// since the previous frame: told the gap, libvpx spends the gap's worth on
// the next frame or more (measured at 2 Mb/s and 640x360: after a gap of 3
// or 6 frame intervals, 3.9 and 5.8 times a frame's bits), a burst that
// queues behind itself on the path just when a transport's stall has ended.
// Frames not taken lose their bits, as in WebRTC's VP8 wrapper (an average
// frame duration, not the gap). With temporal layers the frame's Layer is
// the next of media.Layering's pattern, which every keyframe restarts. It
// returns an error wrapping media.ErrFrame or media.ErrSize for a malformed
// frame, media.ErrClosed after Close, ErrCodec or ErrNoFrame if libvpx
// fails; the pattern does not advance on an error.
func (e *Encoder) Encode(f *media.Frame, forceKey bool) (media.EncodedFrame, error) {
	if e.c == nil {
		return media.EncodedFrame{}, media.ErrClosed
	}
	if err := f.Check(); err != nil {
		return media.EncodedFrame{}, err
	}
	start := time.Now()
	if f.Size != e.size || e.c.live == 0 {
		if err := e.init(f.Size); err != nil {
			return media.EncodedFrame{}, err
		}
	}
	d := e.nominal
	if f.Interval > 0 {
		d = min(max(f.Interval, time.Millisecond), media.MaxFrameInterval)
	}
	if !e.started {
		e.end = 0
	}
	pts := e.end
	key := forceKey || !e.started
	saved := e.layers
	lay := e.layers.Next(key)
	rc := C.rp_enc_encode(e.c, (*C.uchar)(unsafe.Pointer(&f.Y[0])), (*C.uchar)(unsafe.Pointer(&f.U[0])),
		(*C.uchar)(unsafe.Pointer(&f.V[0])), C.int64_t(pts.Microseconds()),
		C.ulong(max(d.Microseconds(), 1)), cbool(key), C.int(lay.TID), cbool(lay.Sync))
	if rc != C.VPX_CODEC_OK {
		e.layers = saved
		return media.EncodedFrame{}, e.codecErr("encode", rc)
	}
	e.started = true
	e.end += d
	out := e.output(start)
	if len(out.Data) == 0 {
		e.layers = saved
		return media.EncodedFrame{}, ErrNoFrame
	}
	if out.Key && !key {
		// libvpx chose a keyframe itself: it restarts the pattern.
		e.layers = saved
		lay = e.layers.Next(true)
	}
	out.Layer = lay
	return out, nil
}

// output collects the compressed frame of the last encode call.
func (e *Encoder) output(start time.Time) media.EncodedFrame {
	out := media.EncodedFrame{Size: e.size, Start: start}
	var (
		buf   unsafe.Pointer
		n     C.size_t
		isKey C.int
	)
	for C.rp_enc_next(e.c, &buf, &n, &isKey) != 0 {
		out.Data = append(out.Data, unsafe.Slice((*byte)(buf), int(n))...)
		out.Key = out.Key || isKey != 0
	}
	out.End = time.Now()
	return out
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// LastQuantizer returns the quantizer (0..63, libvpx's rc_min_quantizer
// scale) libvpx chose for the last encoded frame, or -1 if unknown. A value
// at 63 while the output still exceeds the target means the picture size is
// too large for the bitrate.
func (e *Encoder) LastQuantizer() int {
	if e.c == nil || e.c.live == 0 || !e.started {
		return -1
	}
	return int(C.rp_enc_last_q(e.c))
}

// Close frees the encoder's libvpx state. Further calls return
// media.ErrClosed; Close itself may be called more than once.
func (e *Encoder) Close() error {
	if e.c == nil {
		return nil
	}
	C.rp_enc_destroy(e.c)
	C.free(unsafe.Pointer(e.c))
	e.c = nil
	return nil
}

// Decoder is a VP8 decoder (libvpx). It is not safe for concurrent use.
type Decoder struct {
	c *C.rp_dec // C memory; nil after Close
}

// NewDecoder returns a VP8 decoder. It returns an error wrapping ErrCodec if
// libvpx cannot create one.
func NewDecoder() (*Decoder, error) {
	c := (*C.rp_dec)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rp_dec{}))))
	if c == nil {
		return nil, fmt.Errorf("%w: out of memory", ErrCodec)
	}
	if rc := C.rp_dec_init(c); rc != C.VPX_CODEC_OK {
		C.free(unsafe.Pointer(c))
		return nil, fmt.Errorf("%w: init: %s", ErrCodec, C.GoString(C.vpx_codec_err_to_string(rc)))
	}
	return &Decoder{c: c}, nil
}

// Decode decodes one VP8 frame and returns an I420 copy of the picture, with
// zero Capture and Seq. It returns an error wrapping ErrCodec for data libvpx
// rejects (the decoder stays usable, though frames that depend on the
// rejected one may decode wrongly until the next keyframe), media.ErrSize
// for a picture package media cannot represent, or media.ErrClosed after
// Close.
func (d *Decoder) Decode(data []byte) (*media.Frame, error) {
	if d.c == nil {
		return nil, media.ErrClosed
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: decode: empty frame", ErrCodec)
	}
	var rc C.vpx_codec_err_t
	img := C.rp_dec_decode(d.c, unsafe.Pointer(&data[0]), C.size_t(len(data)), &rc)
	if img == nil {
		msg := C.GoString(C.vpx_codec_err_to_string(rc))
		if det := C.GoString(C.rp_error_detail(&d.c.ctx)); det != "" {
			msg += ": " + det
		}
		return nil, fmt.Errorf("%w: decode: %s", ErrCodec, msg)
	}
	sz := media.Size{W: int(img.d_w), H: int(img.d_h)}
	if img.fmt != C.VPX_IMG_FMT_I420 || sz.W%2 != 0 || sz.H%2 != 0 || sz.W > media.MaxDimension || sz.H > media.MaxDimension {
		return nil, fmt.Errorf("%w: decoded %v picture, format %d", media.ErrSize, sz, int(img.fmt))
	}
	f := media.NewFrame(sz)
	copyPlane(f.Y, sz.W, sz.H, img.planes[0], int(img.stride[0]))
	copyPlane(f.U, sz.W/2, sz.H/2, img.planes[1], int(img.stride[1]))
	copyPlane(f.V, sz.W/2, sz.H/2, img.planes[2], int(img.stride[2]))
	return f, nil
}

// lastRefs returns the reference buffers the last decoded frame used and
// the ones it updated, as bit sets of refLast, refGolden and refAltRef.
func (d *Decoder) lastRefs() (used, updated int, err error) {
	if d.c == nil {
		return 0, 0, media.ErrClosed
	}
	var u, up C.int
	if rc := C.rp_dec_refs(d.c, &u, &up); rc != C.VPX_CODEC_OK {
		return 0, 0, fmt.Errorf("%w: reference info: %s", ErrCodec, C.GoString(C.vpx_codec_err_to_string(rc)))
	}
	return int(u), int(up), nil
}

// VP8's reference buffers, as lastRefs reports them.
const (
	refLast   = C.VP8_LAST_FRAME
	refGolden = C.VP8_GOLD_FRAME
	refAltRef = C.VP8_ALTR_FRAME
)

// copyPlane copies a w x h plane from C memory with the given stride into
// dst, which has stride w.
func copyPlane(dst []byte, w, h int, src *C.uchar, stride int) {
	if h == 0 || w == 0 {
		return
	}
	s := unsafe.Slice((*byte)(unsafe.Pointer(src)), (h-1)*stride+w)
	for y := range h {
		copy(dst[y*w:y*w+w], s[y*stride:y*stride+w])
	}
}

// Close frees the decoder's libvpx state. Further calls return
// media.ErrClosed; Close itself may be called more than once.
func (d *Decoder) Close() error {
	if d.c == nil {
		return nil
	}
	C.rp_dec_destroy(d.c)
	C.free(unsafe.Pointer(d.c))
	d.c = nil
	return nil
}
