/* test-main.c — the runner shared by every tests/test-<area>.c. Each test executable is built
 * from one area file and this one, with OSP_TEST_SUITE naming the area's suite function; the
 * areas' test cases are made by suite_case (suite.h). */
#include <check.h>
#include <stdlib.h>

#include "suite.h"

Suite *OSP_TEST_SUITE(void);

TCase *suite_case(Suite *suite, const char *name, double timeout, const TTest *const *tests)
{
    TCase *tc = tcase_create(name);
    if (timeout > 0)
        tcase_set_timeout(tc, timeout);
    for (const TTest *const *test = tests; *test != NULL; test++)
        tcase_add_test(tc, *test);
    suite_add_tcase(suite, tc);
    return tc;
}

int main(void)
{
    SRunner *runner = srunner_create(OSP_TEST_SUITE());
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
