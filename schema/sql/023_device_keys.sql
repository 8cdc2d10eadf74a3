-- 023_device_keys.sql: the device key made from engine/core/knobs.def (server/device.c,
-- docs/SERVER.md "Devices"): every knob that changes numbers and is not at its default, in
-- its one spelling ("tf32=on", "emulate=bf16:conv+gemm"; a cuda run's default conv_algo
-- heuristic no longer in it). The keys stored before are made again from each run's
-- run.json by the daemon's own function, and the cached matrices, which hold keys, dropped.
-- (Numbered after the issue that made it, 23: other branches add 012 and on.)
UPDATE runs SET device = gpudiff_device_key(meta);
DELETE FROM matrix_cache;
