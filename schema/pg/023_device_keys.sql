-- 023_device_keys.sql: the device key made from engine/core/knobs.def (server/device.c,
-- docs/SERVER.md "Devices"): every knob that changes numbers and is not at its default, in
-- its one spelling. PostgreSQL has no gpudiff_device_key(): the keys the daemon wrote before
-- are rewritten to the new spellings ("tf32=true" -> "tf32=on", ":conv,gemm" ->
-- ":conv+gemm", a cuda run's default " conv_algo=heuristic" left out), which is the new key
-- of every run those keys came from except that knobs the old key did not hold (math_mode,
-- workspace_limit, conv_api, reduced_reduction, dtype, conv_pins) stay out of old runs'
-- keys. The cached matrices, which hold keys, are dropped.
UPDATE runs SET device = replace(replace(replace(device, ' tf32=true', ' tf32=on'),
                                         ':conv,gemm', ':conv+gemm'),
                                 ' conv_algo=heuristic', '');
DELETE FROM matrix_cache;
