# Watchdog: lease renewal, lost-lease notification, fencing tokens.
lk_add_test_file(SOURCE watchdog/watchdog_basic.c LABEL watchdog)
lk_add_test_file(SOURCE watchdog/watchdog_faults.c LABEL watchdog)
lk_add_test_file(SOURCE watchdog/watchdog_scale.c LABEL watchdog TIMEOUT 300)
