/*
 * The C target whose public headers are the top-level include/ folder. It exists so that the
 * Swift C face (ReduxStoreC) sees include/reduxstore.h and `@c @implementation` checks every
 * exported function against its declaration there. It compiles the header once as C, so a
 * header that is not valid C fails the build too; it defines nothing.
 */
#include "reduxstore.h"
#include "reduxstore_inspector.h"
#include "reduxstore_postgres.h"
