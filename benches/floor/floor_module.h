/* What the floor modules share of the Redis module API: the entries every one of them uses,
 * declared here rather than taken from redismodule.h, which no Debian package installs, and the
 * start of their RedisModule_OnLoad. Each floor module is one file that includes this. */
#ifndef FLOOR_MODULE_H
#define FLOOR_MODULE_H

#include <stddef.h>

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleString RedisModuleString;
typedef int (*CommandFunc)(RedisModuleCtx *, RedisModuleString **, int);

static int (*GetApi)(const char *, void *);
static void (*SetModuleAttribs)(RedisModuleCtx *, const char *, int, int);
static int (*CreateCommand)(RedisModuleCtx *, const char *, CommandFunc, const char *, int, int,
                            int);
static int (*WrongArity)(RedisModuleCtx *);
static int (*ReplyWithError)(RedisModuleCtx *, const char *);
static int (*ReplyWithLongLong)(RedisModuleCtx *, long long);
static const char *(*StringPtrLen)(const RedisModuleString *, size_t *);

/* Looks up one API entry by its name; nonzero when the server has none. */
#define API(name) GetApi("RedisModule_" #name, &name)

/* Finds the entries above and names the module `name`; nonzero when one is missing. */
static int floor_start(RedisModuleCtx *ctx, const char *name) {
    GetApi = (int (*)(const char *, void *))(unsigned long)((void **)ctx)[0];
    if (API(SetModuleAttribs) || API(CreateCommand) || API(WrongArity) || API(ReplyWithError) ||
        API(ReplyWithLongLong) || API(StringPtrLen))
        return 1;
    SetModuleAttribs(ctx, name, 1, 1);
    return 0;
}

#endif
