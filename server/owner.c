/*
 * owner.c: a run belongs to the token that created it (migration 020). Only that token, or
 * an admin, may change the run: finish it, send its layers (fetched layers too), post its
 * run.json again, or attach a replay to it. A refusal is logged with the token's id and
 * role, never the token, and answered 403.
 */
#include "db.h"
#include "server.h"

int
srv_run_owner_check(struct srv_req *req, struct srv_db *db, const char *run_id, const char *what)
{
    int64_t owner = 0;
    struct gd_err err;
    int rc = srv_db_run_owner(db, run_id, &owner, &err);
    if (rc != 0)
        return srv_req_fail_err(req, &err);
    if (req->role >= SRV_ROLE_ADMIN || (owner != 0 && owner == req->token_id))
        return 0;
    SRV_LOG(GD_LOG_WARN, req, "refused: token %lld (role %s) may not %s run %s, which belongs to %s",
            (long long)req->token_id, srv_role_name(req->role), what, run_id,
            owner != 0 ? "another token" : "no token (made before runs had owners)");
    if (owner == 0)
        return srv_req_fail(req, SRV_EFORBIDDEN,
                            "run %s was made before runs had owners: only an admin token may "
                            "%s it",
                            run_id, what);
    return srv_req_fail(req, SRV_EFORBIDDEN,
                        "run %s belongs to the token that created it: only that token or an "
                        "admin may %s it",
                        run_id, what);
}
