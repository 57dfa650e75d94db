/* suite.h — a test case of a suite written as one call (test-main.c): its name, its timeout
 * and the tests it runs, in order. */
#ifndef OSP_TEST_SUITE_H
#define OSP_TEST_SUITE_H

#include <check.h>

/* A test case `name` of `suite` running the NULL-ended `tests` in order, with `timeout` seconds
 * (0: Check's default); returned for fixtures. */
TCase *suite_case(Suite *suite, const char *name, double timeout, const TTest *const *tests);

/* SUITE_CASE(suite, "name", timeout, test, test...): suite_case over the tests listed. */
#define SUITE_CASE(suite, name, timeout, ...)                                                      \
    suite_case((suite), (name), (timeout), (const TTest *const[]){__VA_ARGS__, NULL})

#endif
