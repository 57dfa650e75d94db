/* test-main.c — the runner shared by every tests/test-<area>.c. Each test executable is built
 * from one area file and this one, with OSP_TEST_SUITE naming the area's suite function. */
#include <check.h>
#include <stdlib.h>

Suite *OSP_TEST_SUITE(void);

int main(void)
{
    SRunner *runner = srunner_create(OSP_TEST_SUITE());
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
