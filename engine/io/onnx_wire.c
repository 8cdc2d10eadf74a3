/*
 * onnx_wire.c: says why a protobuf does not decode. protobuf-c only answers NULL; this walks
 * the wire format again with the generated descriptors and names the first field that is
 * cut, runs past its message, or has another wire type than onnx.proto declares, with its
 * path from the top message ("graph.node[3].attribute[0]").
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

#define MAX_DEPTH 64

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_GROUP_START = 3,
       WIRE_GROUP_END = 4, WIRE_FIXED32 = 5 };

struct walk {
    char *out;
    size_t cap;
    char path[512];
};

/* Reads a varint at *pos; 0 when it is cut or longer than 10 bytes. */
static int
varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= len)
            return 0;
        uint8_t b = p[(*pos)++];
        *v |= (uint64_t)(b & 0x7f) << (shift < 64 ? shift : 63);
        if (!(b & 0x80))
            return 1;
    }
    return 0;
}

static int
expected_wire(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_BOOL:
    case PROTOBUF_C_TYPE_ENUM:
        return WIRE_VARINT;
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return WIRE_FIXED32;
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return WIRE_FIXED64;
    default:
        return WIRE_LEN;
    }
}

static const char *
wire_name(int w)
{
    static const char *const names[] = {"varint", "64-bit", "length-delimited", "group start",
                                        "group end", "32-bit", "6", "7"};
    return names[w & 7];
}

static int report(struct walk *w, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes "path: what (byte N)"; returns 1, for the callers' return. */
static int
report(struct walk *w, size_t at, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(w->out, w->cap, "%s%s%s (byte %zu)", w->path, w->path[0] ? ": " : "", what, at);
    return 1;
}

/* A packed repeated scalar: its payload must be whole elements. */
static int
check_packed(struct walk *w, const ProtobufCFieldDescriptor *f, const uint8_t *p, size_t len,
             size_t base)
{
    int wire = expected_wire(f);
    if (wire == WIRE_FIXED32 || wire == WIRE_FIXED64) {
        size_t size = wire == WIRE_FIXED32 ? 4 : 8;
        if (len % size != 0)
            return report(w, base, "field %s holds %zu bytes, not a whole number of %zu-byte "
                          "values", f->name, len, size);
        return 0;
    }
    for (size_t pos = 0; pos < len;) {
        uint64_t v;
        if (!varint(p, len, &pos, &v))
            return report(w, base + pos, "field %s: a packed varint is cut", f->name);
    }
    return 0;
}

static int walk_message(struct walk *w, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                        size_t len, size_t base, int depth);

static int
walk_field(struct walk *w, const ProtobufCMessageDescriptor *desc,
           const ProtobufCFieldDescriptor *f, unsigned index, int wire, const uint8_t *p,
           size_t len, size_t *pos, size_t base, int depth)
{
    uint64_t v, n;
    size_t at = *pos;
    switch (wire) {
    case WIRE_VARINT:
        if (!varint(p, len, pos, &v))
            return report(w, base + at, "field %s: its varint value is cut", f ? f->name : "?");
        break;
    case WIRE_FIXED64:
    case WIRE_FIXED32:
        n = wire == WIRE_FIXED64 ? 8 : 4;
        if (len - *pos < n)
            return report(w, base + at, "field %s: a %d-byte value with %zu bytes left",
                          f ? f->name : "?", (int)n, len - *pos);
        *pos += n;
        break;
    case WIRE_LEN:
        if (!varint(p, len, pos, &n))
            return report(w, base + at, "field %s: its length is cut", f ? f->name : "?");
        if (n > len - *pos)
            return report(w, base + at, "field %s is cut: %llu bytes declared, %zu left "
                          "(a truncated file?)", f ? f->name : "?", (unsigned long long)n,
                          len - *pos);
        if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE) {
            size_t keep = strlen(w->path);
            snprintf(w->path + keep, sizeof w->path - keep, "%s%s", keep ? "." : "", f->name);
            if (f->label == PROTOBUF_C_LABEL_REPEATED) {
                size_t k = strlen(w->path);
                snprintf(w->path + k, sizeof w->path - k, "[%u]", index);
            }
            if (walk_message(w, f->descriptor, p + *pos, (size_t)n, base + *pos, depth + 1))
                return 1;
            w->path[keep] = '\0';
        } else if (f != NULL && expected_wire(f) != WIRE_LEN &&
                   check_packed(w, f, p + *pos, (size_t)n, base + *pos)) {
            return 1;
        }
        *pos += (size_t)n;
        break;
    default:
        return report(w, base + at, "field %s has wire type %d (%s), which protobuf-c does not "
                      "decode", f ? f->name : "?", wire, wire_name(wire));
    }
    (void)desc;
    return 0;
}

static int
walk_message(struct walk *w, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
             size_t len, size_t base, int depth)
{
    unsigned count[128] = {0};
    if (depth > MAX_DEPTH)
        return report(w, base, "messages nested more than %d deep", MAX_DEPTH);
    for (size_t pos = 0; pos < len;) {
        size_t at = pos;
        uint64_t tag;
        if (!varint(p, len, &pos, &tag))
            return report(w, base + at, "a field's tag is cut");
        uint64_t number = tag >> 3;
        int wire = (int)(tag & 7);
        if (number == 0 || number > 0x1fffffff)
            return report(w, base + at, "field number %llu is invalid",
                          (unsigned long long)number);
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(desc, (unsigned)number);
        if (f != NULL) {
            int want = expected_wire(f);
            int packed_ok = wire == WIRE_LEN && f->label == PROTOBUF_C_LABEL_REPEATED;
            if (wire != want && !packed_ok)
                return report(w, base + at, "field %s (%llu) has wire type %s, onnx.proto "
                              "declares %s (a wrong field type?)", f->name,
                              (unsigned long long)number, wire_name(wire), wire_name(want));
        }
        unsigned index = 0;
        if (f != NULL) {
            unsigned fi = (unsigned)(f - desc->fields);
            if (fi < 128)
                index = count[fi]++;
        }
        if (walk_field(w, desc, f, index, wire, p, len, &pos, base, depth))
            return 1;
    }
    return 0;
}

void
gd__onnx_wire_explain(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
                      char *out, size_t cap)
{
    struct walk w = {.out = out, .cap = cap};
    if (!walk_message(&w, desc, buf, len, 0, 0))
        snprintf(out, cap, "protobuf-c refused it, though no field is cut or mistyped");
}
