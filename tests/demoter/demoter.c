/* A second module for the tests: when a string key named "{demote}..." changes (DATESEQ.NEXT
 * demote writes "{demote}:yyyyMMdd"), it runs
 * REPLICAOF <host> <port> (its load arguments) through RM_Call, from inside the command that
 * changed the key. That is how a role change can reach idgen while one of its own commands
 * holds its state (DATESEQ.NEXT fires the keyspace event). When a key named "{reenter}..."
 * changes, it calls SNOWFLAKE.NEXT the same way, re-entering idgen, and logs the reply.
 *
 * The few API entries it needs are declared here rather than taken from redismodule.h, which
 * no Debian package installs. */
#include <stddef.h>
#include <string.h>

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleCallReply RedisModuleCallReply;
typedef int (*Notified)(RedisModuleCtx *, int, const char *, RedisModuleString *);

#define NOTIFY_STRING (1 << 3)

static int (*GetApi)(const char *, void *);
static void (*SetModuleAttribs)(RedisModuleCtx *, const char *, int, int);
static int (*SubscribeToKeyspaceEvents)(RedisModuleCtx *, int, Notified);
static RedisModuleCallReply *(*Call)(RedisModuleCtx *, const char *, const char *, ...);
static void (*FreeCallReply)(RedisModuleCallReply *);
static const char *(*StringPtrLen)(const RedisModuleString *, size_t *);
static void (*Log)(RedisModuleCtx *, const char *, const char *, ...);
static const char *(*CallReplyStringPtr)(RedisModuleCallReply *, size_t *);

static char host[64], port[16];

static int on_string_event(RedisModuleCtx *ctx, int type, const char *event, RedisModuleString *key) {
    (void)type;
    (void)event;
    size_t len;
    const char *name = StringPtrLen(key, &len);
    if (len >= 8 && memcmp(name, "{demote}", 8) == 0) {
        RedisModuleCallReply *reply = Call(ctx, "REPLICAOF", "cc", host, port);
        Log(ctx, "warning", "REPLICAOF %s %s: %s", host, port, reply ? "ok" : "refused");
        if (reply) FreeCallReply(reply);
    } else if (len >= 9 && memcmp(name, "{reenter}", 9) == 0) {
        RedisModuleCallReply *reply = Call(ctx, "SNOWFLAKE.NEXT", "");
        size_t n = 0;
        const char *text = reply ? CallReplyStringPtr(reply, &n) : NULL;
        Log(ctx, "warning", "SNOWFLAKE.NEXT from inside DATESEQ.NEXT: %.*s", (int)n,
            text ? text : "(no reply)");
        if (reply) FreeCallReply(reply);
    }
    return 0;
}

static void copy_arg(char *to, size_t size, RedisModuleString *arg) {
    size_t len;
    const char *s = StringPtrLen(arg, &len);
    if (len >= size) len = size - 1;
    memcpy(to, s, len);
    to[len] = 0;
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    GetApi = (int (*)(const char *, void *))(unsigned long)((void **)ctx)[0];
    if (GetApi("RedisModule_SetModuleAttribs", &SetModuleAttribs) ||
        GetApi("RedisModule_SubscribeToKeyspaceEvents", &SubscribeToKeyspaceEvents) ||
        GetApi("RedisModule_Call", &Call) || GetApi("RedisModule_FreeCallReply", &FreeCallReply) ||
        GetApi("RedisModule_StringPtrLen", &StringPtrLen) || GetApi("RedisModule_Log", &Log) ||
        GetApi("RedisModule_CallReplyStringPtr", &CallReplyStringPtr) ||
        argc != 2)
        return 1;
    SetModuleAttribs(ctx, "demoter", 1, 1);
    copy_arg(host, sizeof host, argv[0]);
    copy_arg(port, sizeof port, argv[1]);
    return SubscribeToKeyspaceEvents(ctx, NOTIFY_STRING, on_string_event);
}
