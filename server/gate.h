/*
 * gate.h: gpudiffd's front door. One thread owns the listening socket: it accepts
 * connections within the limits (all at once, and per client address), waits for each
 * request head with a deadline (slow or idle clients are closed in seconds, whatever they
 * trickle), parses it strictly (head.h), answers what it refuses itself in the JSON error
 * form, and hands every good request to libmicrohttpd with the head still unread in the
 * socket. libmicrohttpd then reads the same bytes; the handlers read the gate's parse. The
 * gate also cuts bodies that arrive slower than --body-min-rate after --body-timeout, and
 * keeps the counts /metrics reports (docs/SERVER.md, "Connections"). Over TLS the head
 * is libmicrohttpd's to read: the gate hands a connection over at its first byte and cuts
 * it when its request has not started within the head deadline (gate.c).
 */
#ifndef GPUDIFF_SERVER_GATE_H
#define GPUDIFF_SERVER_GATE_H

#include <stdint.h>

#include <microhttpd.h>

#include "head.h"
#include "server.h"

struct srv_gate;
struct srv_conn;

/* Binds cfg.listen (srv->port gets the bound port); nothing is accepted yet. */
int srv_gate_open(struct srv_server *srv, struct srv_gate **out, struct gd_err *err);

/* Starts accepting into srv->mhd, which must be running (MHD_USE_NO_LISTEN_SOCKET). */
int srv_gate_start(struct srv_gate *g, struct gd_err *err);

/* Stops accepting and closes the connections still waiting for their head. */
void srv_gate_stop(struct srv_gate *g);

/* Frees the gate, after libmicrohttpd was stopped. Accepts NULL. */
void srv_gate_free(struct srv_gate *g);

/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback (cls is the gate). */
void srv_gate_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                     enum MHD_ConnectionNotificationCode code);

/* The gate's record of the connection libmicrohttpd serves, or NULL (never for ours). */
struct srv_conn *srv_gate_conn(struct MHD_Connection *conn);

/* The request on c has started (its head is in): over TLS, its head deadline ends. */
void srv_conn_head_in(struct srv_conn *c);

/* Moves the connection's parsed head to out (once; later calls give a zeroed head). */
void srv_conn_take_head(struct srv_conn *c, struct srv_head *out);

/*
 * The request on c has its head in and expects `body` bytes (0: none): its body deadline
 * starts now. srv_conn_body_bytes() adds what arrived; srv_conn_body_done() ends the
 * deadline (the answer is being made or sent).
 */
void srv_conn_body_begin(struct srv_conn *c, uint64_t body);
void srv_conn_body_bytes(struct srv_conn *c, uint64_t n);
void srv_conn_body_done(struct srv_conn *c);

/* The number of connections open now (waiting for a head, and served). */
void srv_gate_counts(struct srv_gate *g, int64_t *waiting, int64_t *served);

#endif
