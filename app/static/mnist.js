// MNIST-style preprocessing of a drawing, and stroke templates for stamping digits from the keyboard.
//
// MNIST digits are white on black, their bounding box scaled (keeping its aspect ratio) to fit
// 20x20, then placed in a 28x28 image so that their centre of mass is at the centre.

/**
 * Resample a (rows x cols) grey image to (outRows x outCols) by area averaging (exact box filter,
 * for shrinking and enlarging alike).
 */
export function resampleArea(src, rows, cols, outRows, outCols) {
  const tmp = new Float64Array(rows * outCols);
  for (let r = 0; r < rows; r += 1) resampleLine(src, r * cols, 1, cols, tmp, r * outCols, 1, outCols);
  const out = new Float64Array(outRows * outCols);
  for (let c = 0; c < outCols; c += 1) resampleLine(tmp, c, outCols, rows, out, c, outCols, outRows);
  return out;
}

function resampleLine(src, srcStart, srcStride, n, dst, dstStart, dstStride, m) {
  const step = n / m; // source pixels per output pixel
  for (let j = 0; j < m; j += 1) {
    const a = j * step;
    const b = a + step;
    let sum = 0;
    for (let i = Math.floor(a); i < Math.min(n, Math.ceil(b)); i += 1) {
      const overlap = Math.min(b, i + 1) - Math.max(a, i);
      if (overlap > 0) sum += overlap * src[srcStart + i * srcStride];
    }
    dst[dstStart + j * dstStride] = sum / step;
  }
}

/**
 * The 28x28 MNIST-style image of a grey drawing.
 * @param {ArrayLike<number>} grey - row-major intensities in [0, 1], white (1) ink on black (0).
 * @param {number} height
 * @param {number} width
 * @param {{size?: number, box?: number, threshold?: number}} options
 * @returns {Float32Array} size*size values in [0, 1] (all zero for an empty drawing).
 */
export function toMnist(grey, height, width, { size = 28, box = 20, threshold = 0.02 } = {}) {
  let top = height;
  let bottom = -1;
  let left = width;
  let right = -1;
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      if (grey[y * width + x] > threshold) {
        if (y < top) top = y;
        if (y > bottom) bottom = y;
        if (x < left) left = x;
        if (x > right) right = x;
      }
    }
  }
  const out = new Float32Array(size * size);
  if (bottom < 0) return out;
  const cropRows = bottom - top + 1;
  const cropCols = right - left + 1;
  const crop = new Float64Array(cropRows * cropCols);
  for (let y = 0; y < cropRows; y += 1) {
    for (let x = 0; x < cropCols; x += 1) crop[y * cropCols + x] = grey[(top + y) * width + left + x];
  }
  const scale = box / Math.max(cropRows, cropCols);
  const rows = Math.max(1, Math.round(cropRows * scale));
  const cols = Math.max(1, Math.round(cropCols * scale));
  const small = resampleArea(crop, cropRows, cropCols, rows, cols);
  // centre of mass of the scaled digit, in its own pixel coordinates
  let mass = 0;
  let cy = 0;
  let cx = 0;
  for (let y = 0; y < rows; y += 1) {
    for (let x = 0; x < cols; x += 1) {
      const v = small[y * cols + x];
      mass += v;
      cy += v * y;
      cx += v * x;
    }
  }
  cy = mass > 0 ? cy / mass : (rows - 1) / 2;
  cx = mass > 0 ? cx / mass : (cols - 1) / 2;
  const offY = Math.round((size - 1) / 2 - cy);
  const offX = Math.round((size - 1) / 2 - cx);
  for (let y = 0; y < rows; y += 1) {
    const ty = y + offY;
    if (ty < 0 || ty >= size) continue;
    for (let x = 0; x < cols; x += 1) {
      const tx = x + offX;
      if (tx >= 0 && tx < size) out[ty * size + tx] = Math.min(1, Math.max(0, small[y * cols + x]));
    }
  }
  return out;
}

/** Grey intensities of a canvas's pixels (white ink = 1), from the red channel. */
export function canvasGrey(canvas) {
  const { width, height } = canvas;
  const data = canvas.getContext("2d").getImageData(0, 0, width, height).data;
  const grey = new Float32Array(width * height);
  for (let i = 0; i < grey.length; i += 1) grey[i] = data[4 * i] / 255;
  return grey;
}

function arc(cx, cy, rx, ry, from, to, steps = 24) {
  const points = [];
  for (let i = 0; i <= steps; i += 1) {
    const t = ((from + ((to - from) * i) / steps) * Math.PI) / 180;
    points.push([cx + rx * Math.cos(t), cy + ry * Math.sin(t)]);
  }
  return points;
}

// Strokes of each digit in a unit box (x right, y down), angles in degrees (0 = right, 90 = down).
export const DIGIT_STROKES = {
  0: [arc(0.5, 0.5, 0.32, 0.45, 0, 360, 40)],
  1: [[[0.32, 0.22], [0.55, 0.05], [0.55, 0.95]]],
  2: [[...arc(0.5, 0.3, 0.3, 0.25, 200, 390), [0.2, 0.95], [0.82, 0.95]]],
  3: [[...arc(0.48, 0.28, 0.28, 0.22, 200, 450), ...arc(0.48, 0.72, 0.32, 0.24, 270, 520)]],
  4: [[[0.62, 0.95], [0.62, 0.05], [0.12, 0.66], [0.86, 0.66]]],
  5: [[[0.8, 0.06], [0.3, 0.06], [0.25, 0.45], ...arc(0.48, 0.66, 0.32, 0.28, 225, 500)]],
  6: [[...arc(0.62, 0.45, 0.38, 0.45, 290, 180, 16), ...arc(0.5, 0.7, 0.28, 0.25, 180, 540)]],
  7: [[[0.16, 0.08], [0.84, 0.08], [0.42, 0.95]]],
  8: [arc(0.5, 0.27, 0.24, 0.21, -90, 270), arc(0.5, 0.72, 0.3, 0.24, -90, 270)],
  9: [[...arc(0.5, 0.3, 0.28, 0.25, 0, 360), [0.78, 0.3], [0.74, 0.95]]],
};

/**
 * Draw digit `d` onto a 2-D context in the box (x, y, w, h).
 */
export function strokeDigit(ctx, d, x, y, w, hgt) {
  for (const stroke of DIGIT_STROKES[d] || []) {
    ctx.beginPath();
    stroke.forEach(([px, py], i) => {
      const X = x + px * w;
      const Y = y + py * hgt;
      if (i === 0) ctx.moveTo(X, Y);
      else ctx.lineTo(X, Y);
    });
    ctx.stroke();
  }
}
