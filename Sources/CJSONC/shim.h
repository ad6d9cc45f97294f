#ifndef REDUXSTORE_CJSONC_SHIM_H
#define REDUXSTORE_CJSONC_SHIM_H
/* json-c as the Swift core sees it: the public API and nothing else. */
#include <json-c/json.h>
#endif
