/* The Redis API floor of the decoders, for benches/forms.sh: a module in C that reads an ID and
 * replies with the very map SNOWFLAKE.DECODE, UUID7.DECODE or ULID.DECODE replies with, making
 * the same Redis calls (RM_StringPtrLen, RM_ReplyWithMap, RM_ReplyWithStringBuffer,
 * RM_ReplyWithLongLong) with as little code of its own as C allows. A decoder's reply is a map
 * of 6 or 3 pairs, not one integer, so its plain form is this, not a NEXT.
 *
 *   FLOOR.SNOWFLAKE.DECODE id   time_ms, time, datacenter, worker, sequence, epoch_ms of `id`
 *                               under the default layout (41 bits of time, 5 + 5 + 12) and epoch
 *   FLOOR.UUID7.DECODE uuid     time_ms, time, random (19 hex digits) of a UUIDv7
 *   FLOOR.ULID.DECODE ulid      time_ms, time, random (20 hex digits) of a ULID
 *
 * Not a decoder: no error tells what is wrong with a bad ID, times are for 1970 to 9999 only. */
#include <stdint.h>

#include "floor_module.h"

#define TWITTER_EPOCH_MS 1288834974657LL

static int (*ReplyWithMap)(RedisModuleCtx *, long);
static int (*ReplyWithStringBuffer)(RedisModuleCtx *, const char *, size_t);

/* `v` in `width` decimal digits at `out`. */
static void digits(char *out, long long v, int width) {
    for (int i = width - 1; i >= 0; i--) {
        out[i] = (char)('0' + v % 10);
        v /= 10;
    }
}

/* `ms` (1970 to 9999) as "yyyy-MM-ddTHH:mm:ss.SSSZ" in `out` (24 bytes). */
static void utc_text(long long ms, char *out) {
    long long days = ms / 86400000, in_day = ms % 86400000;
    /* Civil from days, counted from 0000-03-01 in 400-year eras. */
    long long z = days + 719468, era = z / 146097, doe = z % 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    long long day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
    long long year = yoe + era * 400 + (month <= 2);
    digits(out, year, 4);
    out[4] = '-';
    digits(out + 5, month, 2);
    out[7] = '-';
    digits(out + 8, day, 2);
    out[10] = 'T';
    digits(out + 11, in_day / 3600000, 2);
    out[13] = ':';
    digits(out + 14, in_day / 60000 % 60, 2);
    out[16] = ':';
    digits(out + 17, in_day / 1000 % 60, 2);
    out[19] = '.';
    digits(out + 20, in_day % 1000, 3);
    out[23] = 'Z';
}

/* The last `n` hex digits of `hi:lo` at `out`. */
static void hex(char *out, uint64_t hi, uint64_t lo, int n) {
    for (int i = n - 1; i >= 0; i--) {
        out[i] = "0123456789abcdef"[lo & 15];
        lo = lo >> 4 | hi << 60;
        hi >>= 4;
    }
}

static int reply_time(RedisModuleCtx *ctx, long long ms) {
    char text[24];
    utc_text(ms, text);
    ReplyWithStringBuffer(ctx, "time_ms", 7);
    ReplyWithLongLong(ctx, ms);
    ReplyWithStringBuffer(ctx, "time", 4);
    return ReplyWithStringBuffer(ctx, text, sizeof text);
}

static int snowflake_decode(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 2) return WrongArity(ctx);
    size_t len;
    const char *p = StringPtrLen(argv[1], &len);
    uint64_t id = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9' || len > 19) return ReplyWithError(ctx, "ERR not an ID");
        id = id * 10 + (uint64_t)(p[i] - '0');
    }
    if (len == 0 || id > INT64_MAX) return ReplyWithError(ctx, "ERR not an ID");
    ReplyWithMap(ctx, 6);
    reply_time(ctx, (long long)(id >> 22) + TWITTER_EPOCH_MS);
    ReplyWithStringBuffer(ctx, "datacenter", 10);
    ReplyWithLongLong(ctx, (long long)(id >> 17 & 31));
    ReplyWithStringBuffer(ctx, "worker", 6);
    ReplyWithLongLong(ctx, (long long)(id >> 12 & 31));
    ReplyWithStringBuffer(ctx, "sequence", 8);
    ReplyWithLongLong(ctx, (long long)(id & 4095));
    ReplyWithStringBuffer(ctx, "epoch_ms", 8);
    return ReplyWithLongLong(ctx, TWITTER_EPOCH_MS);
}

/* A hex digit's value, or -1. */
static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A Crockford base32 digit's value (upper or lower case; I, L, O and U aside), or -1. */
static int base32_value(char c) {
    static const char *alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
    for (int i = 0; i < 32; i++)
        if (alphabet[i] == c) return i;
    return -1;
}

static int reply_time_and_random(RedisModuleCtx *ctx, uint64_t hi, uint64_t lo, int random_bits) {
    char text[20];
    int n = (random_bits + 3) / 4;
    uint64_t mask_hi = random_bits > 64 ? (1ULL << (random_bits - 64)) - 1 : 0;
    ReplyWithMap(ctx, 3);
    reply_time(ctx, (long long)(hi >> 16));
    ReplyWithStringBuffer(ctx, "random", 6);
    hex(text, hi & mask_hi, lo, n);
    return ReplyWithStringBuffer(ctx, text, (size_t)n);
}

static int uuid7_decode(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 2) return WrongArity(ctx);
    size_t len;
    const char *p = StringPtrLen(argv[1], &len);
    if (len != 36) return ReplyWithError(ctx, "ERR not a UUID");
    uint64_t half[2] = {0, 0};
    int nibbles = 0;
    for (size_t i = 0; i < len; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (p[i] != '-') return ReplyWithError(ctx, "ERR not a UUID");
            continue;
        }
        int v = hex_value(p[i]);
        if (v < 0) return ReplyWithError(ctx, "ERR not a UUID");
        half[nibbles / 16] = half[nibbles / 16] << 4 | (uint64_t)v;
        nibbles++;
    }
    if ((half[0] >> 12 & 15) != 7) return ReplyWithError(ctx, "ERR not a UUIDv7");
    /* The random bits: 12 after the version, 62 after the variant. */
    uint64_t hi = (half[0] & ~0xffffULL) | (half[0] & 0xfff) >> 2;
    uint64_t lo = (half[0] & 3) << 62 | (half[1] & ((1ULL << 62) - 1));
    return reply_time_and_random(ctx, hi, lo, 74);
}

static int ulid_decode(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 2) return WrongArity(ctx);
    size_t len;
    const char *p = StringPtrLen(argv[1], &len);
    if (len != 26 || p[0] > '7') return ReplyWithError(ctx, "ERR not a ULID");
    uint64_t hi = 0, lo = 0;
    for (size_t i = 0; i < len; i++) {
        int v = base32_value(p[i]);
        if (v < 0) return ReplyWithError(ctx, "ERR not a ULID");
        hi = hi << 5 | lo >> 59;
        lo = lo << 5 | (uint64_t)v;
    }
    return reply_time_and_random(ctx, hi, lo, 80);
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    if (floor_start(ctx, "decodefloor") || API(ReplyWithMap) || API(ReplyWithStringBuffer))
        return 1;
    if (CreateCommand(ctx, "FLOOR.SNOWFLAKE.DECODE", snowflake_decode, "fast", 0, 0, 0) ||
        CreateCommand(ctx, "FLOOR.UUID7.DECODE", uuid7_decode, "fast", 0, 0, 0) ||
        CreateCommand(ctx, "FLOOR.ULID.DECODE", ulid_decode, "fast", 0, 0, 0))
        return 1;
    return 0;
}
