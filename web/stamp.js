// Reader for the pixel timestamp (stamp format version 1), the same
// algorithm as the Go reader in package media.
//
// The frame's top 3c rows (c = W/20, W = frame width) hold a grid of 20
// columns x 3 rows of c x c cells. Each cell is one bit, read row-major:
// 1 when the mean luma (0.299R + 0.587G + 0.114B) of its central square of
// side c/2 (from c/4 to c/4 + c/2, exclusive, on both axes) is above 125
// (cells are painted with luma 235 or 16).
//   b0..b3    start marker 1,1,0,1
//   b4..b43   capture time, ms since the Unix epoch modulo 2^40, MSB first
//   b44..b59  CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF) of the 40-bit
//             value as 5 big-endian bytes
// The full time is the value plus the multiple of 2^40 nearest to a
// reference time (now in the sender's clock); more than one hour away is a
// misread. 2^40 exceeds 32-bit integer operations, so values are handled as
// exact doubles (below 2^53) with multiplication and division only.
'use strict';

(function (global) {
  const COLS = 20;
  const ROWS = 3;
  const MARKER = [1, 1, 0, 1];
  const MOD = 2 ** 40;
  const MAX_DISTANCE_MS = 3600 * 1000;
  const MIN_CELL = 4; // pixels
  const SPLIT = 125; // luma

  // cellSize returns the stamp's cell size in pixels for a frame width.
  function cellSize(width) {
    return Math.floor(width / COLS);
  }

  // bandHeight returns how many rows from the top of the frame the stamp
  // occupies.
  function bandHeight(width) {
    return ROWS * cellSize(width);
  }

  // crc16 returns CRC-16/CCITT-FALSE of an array of bytes.
  function crc16(bytes) {
    let crc = 0xffff;
    for (const b of bytes) {
      crc ^= (b & 0xff) << 8;
      for (let i = 0; i < 8; i++) {
        crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
      }
    }
    return crc;
  }

  // bytes40 returns the 5-byte big-endian encoding of a value below 2^40.
  function bytes40(v) {
    const out = new Array(5);
    for (let k = 4; k >= 0; k--) {
      out[k] = v % 256;
      v = Math.floor(v / 256);
    }
    return out;
  }

  // readBits reads the 60 cell bits from RGBA pixel data whose rows are
  // `stride` pixels wide and which covers at least the stamp band of a
  // frame `width` pixels wide. It returns null when the band does not fit.
  function readBits(data, stride, width) {
    const c = cellSize(width);
    if (c < MIN_CELL || stride < width || data.length < stride * ROWS * c * 4) {
      return null;
    }
    const lo = Math.floor(c / 4);
    const hi = lo + Math.floor(c / 2);
    const bits = new Array(COLS * ROWS);
    for (let j = 0; j < ROWS; j++) {
      for (let i = 0; i < COLS; i++) {
        let sum = 0;
        let n = 0;
        for (let y = j * c + lo; y < j * c + hi; y++) {
          let p = (y * stride + i * c + lo) * 4;
          for (let x = i * c + lo; x < i * c + hi; x++, p += 4) {
            sum += 0.299 * data[p] + 0.587 * data[p + 1] + 0.114 * data[p + 2];
            n++;
          }
        }
        bits[j * COLS + i] = sum / n > SPLIT ? 1 : 0;
      }
    }
    return bits;
  }

  // decodeBits checks the marker and the CRC of 60 bits and returns the
  // 40-bit value, or null for a misread.
  function decodeBits(bits) {
    if (!bits || bits.length !== COLS * ROWS) {
      return null;
    }
    for (let i = 0; i < MARKER.length; i++) {
      if (bits[i] !== MARKER[i]) {
        return null;
      }
    }
    let v = 0;
    for (let i = 4; i < 44; i++) {
      v = v * 2 + bits[i];
    }
    let crc = 0;
    for (let i = 44; i < 60; i++) {
      crc = crc * 2 + bits[i];
    }
    return crc16(bytes40(v)) === crc ? v : null;
  }

  // unwrap returns the full time in ms since the epoch nearest to refMs whose
  // value modulo 2^40 is v, or null when that is more than an hour from refMs.
  function unwrap(v, refMs) {
    const k = Math.round((refMs - v) / MOD);
    const full = v + k * MOD;
    return Math.abs(full - refMs) > MAX_DISTANCE_MS ? null : full;
  }

  // read reads the stamp from RGBA data (rows `stride` pixels wide) of a
  // frame `width` pixels wide and returns the capture time in ms since the
  // epoch in the sender's clock, or null for a misread. refMs is now in the
  // sender's clock.
  function read(data, stride, width, refMs) {
    const v = decodeBits(readBits(data, stride, width));
    return v === null ? null : unwrap(v, refMs);
  }

  // encodeBits returns the 60 bits that stamp ms (ms since the epoch); it
  // exists so that tests can paint a stamp in the page.
  function encodeBits(ms) {
    const v = ms % MOD;
    const bits = MARKER.slice();
    for (let i = 39; i >= 0; i--) {
      bits.push(Math.floor(v / 2 ** i) % 2);
    }
    const crc = crc16(bytes40(v));
    for (let i = 15; i >= 0; i--) {
      bits.push((crc >> i) & 1);
    }
    return bits;
  }

  global.ReplenishStamp = {
    cellSize, bandHeight, crc16, readBits, decodeBits, unwrap, read, encodeBits,
  };
})(window);
