/* The Redis API floor of DATESEQ.NEXT, for the instruction table: a module in C that makes the
 * very Redis calls DATESEQ.NEXT makes for a counter that exists, with as little code of its own
 * as C allows, so that what is left between the two is our own code.
 *
 *   FLOOR.DATESEQ prefix            today's counter of "{prefix}:yyyyMMdd", moved on by one:
 *                                   the ACL check on that key (RM_GetCurrentUserName,
 *                                   RM_GetModuleUserFromUserName, RM_ACLCheckKeyPermissions,
 *                                   RM_FreeModuleUser, RM_FreeString), RM_OpenKey, RM_KeyType,
 *                                   RM_StringDMA, the digits rewritten in place,
 *                                   RM_Replicate("INCR"), RM_NotifyKeyspaceEvent, RM_CloseKey
 *                                   and RM_ReplyWithLongLong of yyyyMMdd * 10^10 + seq.
 *   FLOOR.DATESEQ-UNCHECKED prefix  the same without the ACL check: what the check costs.
 *
 * Not a generator: no failover gap, no eviction or replica checks, UTC days, no options. The
 * key's name is kept between calls as DATESEQ.NEXT keeps it. A new key is set to 1 with a TTL
 * of two days and replicated as SET (cold path, not counted).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "floor_module.h"

typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleUser RedisModuleUser;

#define OK 0
#define READ (1 << 0)
#define WRITE (1 << 1)
#define KEYTYPE_EMPTY 0
#define KEYTYPE_STRING 1
#define NOTIFY_STRING (1 << 3)
#define KEY_ACCESS (1 << 4)
#define KEY_UPDATE (1 << 5)
#define KEY_INSERT (1 << 6)

static RedisModuleString *(*CreateString)(RedisModuleCtx *, const char *, size_t);
static void (*FreeString)(RedisModuleCtx *, RedisModuleString *);
static RedisModuleString *(*GetCurrentUserName)(RedisModuleCtx *);
static RedisModuleUser *(*GetModuleUserFromUserName)(RedisModuleString *);
static int (*ACLCheckKeyPermissions)(RedisModuleUser *, RedisModuleString *, int);
static int (*FreeModuleUser)(RedisModuleUser *);
static RedisModuleKey *(*OpenKey)(RedisModuleCtx *, RedisModuleString *, int);
static int (*KeyType)(RedisModuleKey *);
static char *(*StringDMA)(RedisModuleKey *, size_t *, int);
static int (*StringTruncate)(RedisModuleKey *, size_t);
static int (*StringSet)(RedisModuleKey *, RedisModuleString *);
static int (*SetExpire)(RedisModuleKey *, long long);
static void (*CloseKey)(RedisModuleKey *);
static int (*Replicate)(RedisModuleCtx *, const char *, const char *, ...);
static int (*NotifyKeyspaceEvent)(RedisModuleCtx *, int, const char *, RedisModuleString *);

/* The key name last used, and the UTC day it names. */
static char prefix[64];
static size_t prefix_len;
static long long day_start_ms = -1, day_end_ms = -1;
static long long date;
static RedisModuleString *name;

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The counter key of `p` today, renamed only when the prefix or the day changes. */
static RedisModuleString *counter_name(const char *p, size_t len) {
    long long ms = now_ms();
    int same_day = ms >= day_start_ms && ms < day_end_ms;
    if (name && same_day && len == prefix_len && memcmp(p, prefix, len) == 0) return name;
    if (len >= sizeof prefix) return NULL;
    time_t secs = ms / 1000;
    struct tm tm;
    gmtime_r(&secs, &tm);
    date = (tm.tm_year + 1900) * 10000LL + (tm.tm_mon + 1) * 100 + tm.tm_mday;
    day_start_ms = ms - ms % 86400000;
    day_end_ms = day_start_ms + 86400000;
    memcpy(prefix, p, len);
    prefix_len = len;
    char buf[96];
    int n = snprintf(buf, sizeof buf, "{%.*s}:%lld", (int)len, p, date);
    if (name) FreeString(NULL, name);
    name = CreateString(NULL, buf, (size_t)n);
    return name;
}

/* `v`'s decimal digits at the start of `out`; their count. snprintf would cost more than the
 * rest of this module's own work. */
static size_t decimal(long long v, char *out) {
    char rev[24];
    size_t n = 0;
    do {
        rev[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    for (size_t i = 0; i < n; i++) out[i] = rev[n - 1 - i];
    return n;
}

/* Whether the caller's ACL user may write `key`: DATESEQ.NEXT's exact check. */
static int may_write(RedisModuleCtx *ctx, RedisModuleString *key) {
    RedisModuleString *user_name = GetCurrentUserName(ctx);
    if (!user_name) return 1;
    RedisModuleUser *user = GetModuleUserFromUserName(user_name);
    int ok = user && ACLCheckKeyPermissions(user, key, KEY_ACCESS | KEY_UPDATE | KEY_INSERT) == OK;
    if (user) FreeModuleUser(user);
    FreeString(ctx, user_name);
    return ok;
}

static int next(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int checked) {
    if (argc != 2) return WrongArity(ctx);
    size_t len;
    const char *p = StringPtrLen(argv[1], &len);
    RedisModuleString *key_name = counter_name(p, len);
    if (!key_name) return ReplyWithError(ctx, "ERR prefix too long for the floor module");
    if (checked && !may_write(ctx, key_name))
        return ReplyWithError(ctx, "NOPERM this user has no permissions to access the key");
    RedisModuleKey *key = OpenKey(ctx, key_name, READ | WRITE);
    long long seq = 0;
    int type = KeyType(key);
    if (type == KEYTYPE_STRING) {
        size_t n;
        char *digits = StringDMA(key, &n, WRITE);
        /* Checked as DATESEQ.NEXT checks it: 1 to 18 digits, so no value overflows. */
        int numeric = n >= 1 && n <= 18;
        for (size_t i = 0; numeric && i < n; i++) {
            numeric = digits[i] >= '0' && digits[i] <= '9';
            seq = seq * 10 + (digits[i] - '0');
        }
        if (!numeric) {
            CloseKey(key);
            return ReplyWithError(ctx, "ERR the counter key does not hold a count");
        }
        seq++;
        char buf[24];
        size_t m = decimal(seq, buf);
        if (m != n) {
            StringTruncate(key, m);
            digits = StringDMA(key, &n, WRITE);
        }
        memcpy(digits, buf, m);
        Replicate(ctx, "INCR", "s", key_name);
    } else if (type == KEYTYPE_EMPTY) {
        seq = 1;
        RedisModuleString *one = CreateString(ctx, "1", 1);
        StringSet(key, one);
        SetExpire(key, 2 * 86400000LL);
        FreeString(ctx, one);
        Replicate(ctx, "SET", "sccl", key_name, "1", "PX", 2 * 86400000LL);
    } else {
        CloseKey(key);
        return ReplyWithError(ctx, "WRONGTYPE not a counter");
    }
    NotifyKeyspaceEvent(ctx, NOTIFY_STRING, "incrby", key_name);
    CloseKey(key);
    return ReplyWithLongLong(ctx, date * 10000000000LL + seq);
}

static int next_checked(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    return next(ctx, argv, argc, 1);
}

static int next_unchecked(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    return next(ctx, argv, argc, 0);
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    if (floor_start(ctx, "dateseqfloor") || API(CreateString) || API(FreeString) ||
        API(GetCurrentUserName) || API(GetModuleUserFromUserName) ||
        API(ACLCheckKeyPermissions) || API(FreeModuleUser) || API(OpenKey) || API(KeyType) ||
        API(StringDMA) || API(StringTruncate) || API(StringSet) || API(SetExpire) ||
        API(CloseKey) || API(Replicate) || API(NotifyKeyspaceEvent))
        return 1;
    if (CreateCommand(ctx, "FLOOR.DATESEQ", next_checked, "write deny-oom fast", 1, 1, 1) ||
        CreateCommand(ctx, "FLOOR.DATESEQ-UNCHECKED", next_unchecked, "write deny-oom fast", 1, 1,
                      1))
        return 1;
    return 0;
}
