lk_add_bench(watchdog_scale SOURCES watchdog_scale.c)
