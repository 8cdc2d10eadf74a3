// npy.js: reads a .npy file (format versions 1.0, 2.0 and 3.0) into a typed array: C order,
// little-endian bool, int8-64, uint8-64, float16, float32, float64 (what gpudiffd serves).
// Spec: numpy/lib/format.py. Big-endian or Fortran-order files are refused with a message.

const DTYPES = {
    b1: {name: 'bool', size: 1, array: Uint8Array, kind: 'b'},
    i1: {name: 'int8', size: 1, array: Int8Array, kind: 'i'},
    u1: {name: 'uint8', size: 1, array: Uint8Array, kind: 'u'},
    i2: {name: 'int16', size: 2, array: Int16Array, kind: 'i'},
    u2: {name: 'uint16', size: 2, array: Uint16Array, kind: 'u'},
    i4: {name: 'int32', size: 4, array: Int32Array, kind: 'i'},
    u4: {name: 'uint32', size: 4, array: Uint32Array, kind: 'u'},
    i8: {name: 'int64', size: 8, array: BigInt64Array, kind: 'i'},
    u8: {name: 'uint64', size: 8, array: BigUint64Array, kind: 'u'},
    f2: {name: 'float16', size: 2, array: Uint16Array, kind: 'f'},
    f4: {name: 'float32', size: 4, array: Float32Array, kind: 'f'},
    f8: {name: 'float64', size: 8, array: Float64Array, kind: 'f'},
};

export class NpyError extends Error {}

// Reads the header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
function parseHeader(text) {
    const descr = /'descr'\s*:\s*'([^']*)'/.exec(text);
    const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(text);
    const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(text);
    if (!descr || !fortran || !shape)
        throw new NpyError('not a .npy header: ' + text.slice(0, 80));
    const dims = shape[1].split(',').map((x) => x.trim()).filter((x) => x !== '');
    return {
        descr: descr[1],
        fortranOrder: fortran[1] === 'True',
        shape: dims.map((x) => {
            if (!/^\d+$/.test(x))
                throw new NpyError('bad shape entry ' + x);
            return Number(x);
        }),
    };
}

// parseNpy(ArrayBuffer) -> {dtype, kind, itemSize, shape, size, data, dataOffset}
export function parseNpy(buffer) {
    const bytes = new Uint8Array(buffer);
    const magic = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY
    if (bytes.length < 10 || magic.some((b, i) => bytes[i] !== b))
        throw new NpyError('not a .npy file (no \\x93NUMPY magic)');
    const major = bytes[6];
    const view = new DataView(buffer);
    let headerLen, headerStart;
    if (major === 1) {
        headerLen = view.getUint16(8, true);
        headerStart = 10;
    } else if (major === 2 || major === 3) {
        if (bytes.length < 12)
            throw new NpyError('truncated .npy header');
        headerLen = view.getUint32(8, true);
        headerStart = 12;
    } else {
        throw new NpyError('unknown .npy format version ' + major + '.' + bytes[7]);
    }
    const dataOffset = headerStart + headerLen;
    if (dataOffset > bytes.length)
        throw new NpyError('truncated .npy header');
    const decoder = new TextDecoder(major === 3 ? 'utf-8' : 'latin1');
    const header = parseHeader(decoder.decode(bytes.subarray(headerStart, dataOffset)));
    if (header.fortranOrder)
        throw new NpyError('Fortran-order arrays are not supported (gpudiff stores C order)');
    const m = /^([<>|=])([a-z]\d+)$/.exec(header.descr);
    if (!m || !DTYPES[m[2]])
        throw new NpyError('unsupported dtype ' + header.descr);
    const dt = DTYPES[m[2]];
    if (m[1] === '>' && dt.size > 1)
        throw new NpyError('big-endian data is not supported (' + header.descr + ')');
    const size = header.shape.reduce((a, b) => a * b, 1);
    const nbytes = size * dt.size;
    if (dataOffset + nbytes !== bytes.length)
        throw new NpyError(`.npy data is ${bytes.length - dataOffset} bytes, its header says ${nbytes}`);
    // A typed array needs an aligned offset; numpy pads headers to 64 bytes, copy otherwise.
    const data = dataOffset % dt.size === 0
        ? new dt.array(buffer, dataOffset, size)
        : new dt.array(buffer.slice(dataOffset, dataOffset + nbytes));
    return {dtype: dt.name, kind: dt.kind, itemSize: dt.size, shape: header.shape, size, data,
            dataOffset};
}

// The value at flat index i as a JS number (float16 decoded; 64-bit ints may round).
export function valueAt(arr, i) {
    const v = arr.data[i];
    if (arr.dtype === 'float16')
        return halfToFloat(v);
    return typeof v === 'bigint' ? Number(v) : v;
}

export function halfToFloat(bits) {
    const sign = bits & 0x8000 ? -1 : 1;
    const exp = (bits >> 10) & 0x1f, frac = bits & 0x3ff;
    if (exp === 0)
        return sign * frac * 2 ** -24;
    if (exp === 31)
        return frac ? NaN : sign * Infinity;
    return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

// Ordered integer of a float's bits: +x -> bits, -x -> -(bits of |x|), so both zeros are 0
// and the distance of two values is the number of representable values between them
// (docs/COMPARISON.md, "ULP distance"). BigInt, so float64 stays exact.
function ordered(arr, i) {
    const dv = new DataView(arr.data.buffer, arr.data.byteOffset + i * arr.itemSize, arr.itemSize);
    if (arr.itemSize === 8) {
        const bits = dv.getBigUint64(0, true);
        const mag = bits & 0x7fffffffffffffffn;
        return bits >> 63n ? -mag : mag;
    }
    if (arr.itemSize === 4) {
        const bits = dv.getUint32(0, true);
        const mag = BigInt(bits & 0x7fffffff);
        return bits >>> 31 ? -mag : mag;
    }
    const bits = dv.getUint16(0, true);
    const mag = BigInt(bits & 0x7fff);
    return bits >> 15 ? -mag : mag;
}

// ULP distance of element i in two arrays of the same float dtype (null when either side is
// not finite); for integers and bool the absolute difference.
export function ulpDistance(a, b, i) {
    const va = valueAt(a, i), vb = valueAt(b, i);
    if (a.kind !== 'f' || a.dtype !== b.dtype)
        return Number.isFinite(va - vb) && a.kind !== 'f' ? Math.abs(va - vb) : null;
    if (!Number.isFinite(va) || !Number.isFinite(vb))
        return null;
    const d = ordered(a, i) - ordered(b, i);
    return Number(d < 0n ? -d : d);
}

// Flat index -> multi-index in a C-order shape.
export function unravel(index, shape) {
    const out = new Array(shape.length);
    let rest = index;
    for (let d = shape.length - 1; d >= 0; d--) {
        out[d] = shape[d] ? rest % shape[d] : 0;
        rest = shape[d] ? Math.floor(rest / shape[d]) : 0;
    }
    return out;
}
