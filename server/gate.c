/*
 * gate.c: the front door (gate.h). libmicrohttpd 0.9.75 reads request heads with no
 * deadline of its own (an idle timeout only, which a client trickling a byte every few
 * seconds never reaches), answers what it cannot parse with HTML bodies, and drops what
 * follows a NUL in a header line; so heads are read here first, with MSG_PEEK: nothing is
 * consumed, and a good head is handed over still in the socket (MHD_add_connection), to be
 * read again by libmicrohttpd as the same bytes. Every connection serves one request
 * (responses say "Connection: close"), so every request passes through here.
 *
 * Records of connections are indexed by descriptor. libmicrohttpd reports the end of the
 * ones it serves (MHD_CONNECTION_NOTIFY_CLOSED) before it closes the descriptor, under the
 * same lock the gate holds when it cuts a slow body with shutdown(), so a descriptor is
 * never cut after it was reused.
 *
 * Over TLS (--tls-cert) the bytes are encrypted and libmicrohttpd's GnuTLS decrypts them,
 * so the gate cannot read the head first. It keeps what it can do without the clear bytes:
 * accept, both connection caps, and the head deadline, which for a TLS connection covers
 * the handshake and the head together (the connection is cut when its first access-handler
 * call, srv_conn_head_in(), has not come by then). It waits for the first byte only to
 * answer a plain-HTTP client in clear words (a TLS connection starts with a handshake
 * record, 0x16). The head checks move to where the request starts (http.c,
 * srv_head_rebuild()); the body deadline is the same for both.
 */
#define _GNU_SOURCE /* accept4, pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netdb.h>

#include "gate.h"

/* What a refused connection may still send us before we close it (its unread body). */
#define LINGER_BYTES (1 << 20)
#define LINGER_SECS  2.0
#define TICK_MS      100
#define IP_BUCKETS   1024
#define EVENTS       256

enum conn_state {
    CONN_HEAD,   /* accepted, waiting for its request head (the gate's) */
    CONN_LINGER, /* answered by the gate, reading what the client still sends */
    CONN_HANDED, /* given to libmicrohttpd, which has not reported it yet */
    CONN_SERVED  /* libmicrohttpd serves it */
};

struct ip_count {
    struct ip_count *next;
    unsigned char addr[16];
    int count;
};

struct srv_conn {
    struct srv_gate *gate;
    int fd;
    enum conn_state state;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    struct ip_count *ip;
    double t_accept;
    size_t peeked;   /* bytes seen by the last MSG_PEEK */
    size_t lingered; /* bytes read and dropped after the gate's answer */
    double linger_until;
    struct srv_head head;         /* the parse, until the request takes it */
    struct srv_conn *prev, *next; /* in the gate's list of its state */
    /* the body deadline of the request libmicrohttpd serves */
    _Atomic int body_active;
    _Atomic uint64_t body_expected, body_received;
    double t_body; /* written before body_active is set */
    int cut;
    _Atomic int head_pending; /* TLS: handed over before its head, which has not come yet */
};

struct list {
    struct srv_conn *head, *tail;
    int64_t n;
};

struct srv_gate {
    struct srv_server *srv;
    int listen_fd, epoll_fd, wake_fd[2];
    pthread_t thread;
    int started;
    atomic_int stop;
    pthread_mutex_t mu; /* the table, the lists, the address counts */
    struct srv_conn **by_fd;
    int table_size;
    struct list waiting, lingering, served; /* served: handed or served by libmicrohttpd */
    struct ip_count *ips[IP_BUCKETS];
    char *peek; /* max_header + 1 bytes */
    int tls;    /* libmicrohttpd speaks TLS: heads are not peeked (see above) */
    int health_route; /* GET /healthz's index in srv_routes, for /metrics; -1 until found */
};

static void
list_add(struct list *l, struct srv_conn *c)
{
    c->prev = l->tail;
    c->next = NULL;
    if (l->tail != NULL)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->n++;
}

static void
list_del(struct list *l, struct srv_conn *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        l->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    else
        l->tail = c->prev;
    c->prev = c->next = NULL;
    l->n--;
}

/* The client address as 16 bytes (IPv4 as v4-mapped IPv6), for the per-address count. */
static void
addr_key(const struct sockaddr_storage *ss, unsigned char key[16])
{
    memset(key, 0, 16);
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &in->sin_addr, 4);
    } else if (ss->ss_family == AF_INET6) {
        memcpy(key, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
    }
}

static struct ip_count **
ip_find(struct srv_gate *g, const unsigned char key[16])
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < 16; i++)
        h = (h ^ key[i]) * 16777619u;
    struct ip_count **p = &g->ips[h % IP_BUCKETS];
    while (*p != NULL && memcmp((*p)->addr, key, 16) != 0)
        p = &(*p)->next;
    return p;
}

static void
ip_release(struct srv_gate *g, struct ip_count *ip)
{
    if (ip == NULL || --ip->count > 0)
        return;
    struct ip_count **p = ip_find(g, ip->addr);
    *p = ip->next;
    free(ip);
}

static void
addr_text(const struct sockaddr_storage *ss, socklen_t len, char *out, size_t size)
{
    if (getnameinfo((const struct sockaddr *)ss, len, out, (socklen_t)size, NULL, 0,
                    NI_NUMERICHOST) != 0)
        snprintf(out, size, "?");
}

/* ---- answers the gate gives itself ---- */

static const char *
reason(unsigned status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 408:
        return "Request Timeout";
    case 411:
        return "Length Required";
    case 414:
        return "URI Too Long";
    case 431:
        return "Request Header Fields Too Large";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Error";
    }
}

/*
 * Sends body (a JSON object the gate made; taken) with status (best effort: a few hundred
 * bytes into an empty socket buffer never block). The connection is then closed or lingers.
 */
static void
send_json(int fd, unsigned status, json_t *body, const char *id)
{
    char *text = body != NULL ? json_dumps(body, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(body);
    char head[512];
    size_t tlen = text != NULL ? strlen(text) + 1 : 0;
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
                     "X-Request-Id: %s\r\nConnection: close\r\n%s\r\n",
                     status, reason(status), tlen, id, status == 503 ? "Retry-After: 1\r\n" : "");
    struct iovec iov[3] = {{head, (size_t)n}, {text, tlen ? tlen - 1 : 0}, {"\n", tlen ? 1 : 0}};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 3};
    if (sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        SRV_LOG(GD_LOG_DEBUG, NULL, "[%s] the answer could not be sent: %s", id, strerror(errno));
    free(text);
}

/* The JSON error of code as requests get it. */
static json_t *
error_json(int code, const char *msg, const char *id)
{
    char clean[256];
    snprintf(clean, sizeof clean, "%s", msg);
    for (char *p = clean; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            *p = '?';
    return json_pack("{s:{s:s,s:s,s:s}}", "error", "code", srv_err_code(code), "message", clean,
                     "request_id", id);
}

/* Sends the JSON error for code and logs the access line. */
static void
send_error(struct srv_gate *g, int fd, int code, const char *msg, const char *what)
{
    char id[48];
    srv_request_id_new(g->srv, NULL, id, sizeof id);
    unsigned status = srv_err_status(code);
    send_json(fd, status, error_json(code, msg, id), id);
    SRV_LOG(GD_LOG_INFO, NULL, "[%s] %s refused: %u %s", id, what, status, msg);
    srv_metrics_request(SRV_METRICS_REFUSED, status, 0);
}

/* ---- records ---- */

static void
conn_close(struct srv_gate *g, struct srv_conn *c, struct list *from)
{
    if (from != NULL)
        list_del(from, c);
    epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    g->by_fd[c->fd] = NULL;
    ip_release(g, c->ip);
    srv_head_fini(&c->head);
    free(c);
}

/* After the gate's answer: c lingers (reading what it still sends) before it is closed. */
static void
linger(struct srv_gate *g, struct srv_conn *c)
{
    shutdown(c->fd, SHUT_WR);
    list_del(&g->waiting, c);
    c->state = CONN_LINGER;
    c->linger_until = srv_clock() + LINGER_SECS;
    int lowat = 1;
    setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
    list_add(&g->lingering, c);
}

/* Answers c with code and lets it linger. */
static void
refuse(struct srv_gate *g, struct srv_conn *c, int code, const char *msg, const char *what)
{
    send_error(g, c->fd, code, msg, what);
    linger(g, c);
}

/*
 * GET /healthz, answered here (issue 24): its answer is the health thread's last check,
 * in memory (health.c), so the probe a balancer sends every few hundred milliseconds never
 * waits for a thread of libmicrohttpd, which an upload storm keeps busy, nor for the hand-
 * over's wake-up of one: the same body and headers as route_health.c's, the same access
 * line and /metrics counts. Its head is read (it was only peeked) so that the close sends no
 * reset. 1 when answered.
 */
static int
answer_health(struct srv_gate *g, struct srv_conn *c, struct srv_head *head)
{
    if (g->srv->health == NULL || strcmp(head->method, "GET") != 0 ||
        strcmp(head->path, "/healthz") != 0 || (head->has_length && head->content_length > 0))
        return 0;
    if (g->health_route < 0)
        for (int i = 0; i < srv_route_count && g->health_route < 0; i++)
            if (strcmp(srv_routes[i].method, "GET") == 0 &&
                strcmp(srv_routes[i].pattern, "/healthz") == 0)
                g->health_route = i;
    char id[48];
    srv_request_id_new(g->srv, srv_head_field(head, "X-Request-Id"), id, sizeof id);
    char drain[4096];
    size_t left = head->head_len;
    while (left > 0) {
        ssize_t n = recv(c->fd, drain, left < sizeof drain ? left : sizeof drain, MSG_DONTWAIT);
        if (n <= 0)
            break;
        left -= (size_t)n;
    }
    int version = 0;
    double age = 0;
    char why[300];
    int ok = srv_health_get(g->srv->health, &version, &age, why, sizeof why);
    unsigned status = ok ? 200 : srv_err_status(SRV_EBUSY);
    send_json(c->fd, status,
              ok ? srv_health_ok_json(g->srv, version) : error_json(SRV_EBUSY, why, id), id);
    double secs = srv_clock() - c->t_accept;
    srv_metrics_request(g->health_route, status, secs);
    SRV_LOG(GD_LOG_INFO, NULL, "[%s] GET /healthz %u 0 bytes in %.1f ms (the gate's)%s%s", id,
            status, secs * 1e3, ok ? "" : ": ", why);
    srv_head_fini(head);
    linger(g, c);
    return 1;
}

/* A first look at the request line, for log lines about a refused head. */
static void
describe(const char *data, size_t n, char *out, size_t size)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < size && data[i] != '\r' && data[i] != '\n'; i++)
        out[k++] = ((unsigned char)data[i] < 0x20 || (unsigned char)data[i] > 0x7e) ? '?' : data[i];
    out[k] = '\0';
    if (k > 120)
        snprintf(out + 117, size - 117, "...");
}

static void
hand_over(struct srv_gate *g, struct srv_conn *c)
{
    int lowat = 1;
    setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
    epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    list_del(&g->waiting, c);
    c->state = CONN_HANDED;
    list_add(&g->served, c);
    /* libmicrohttpd may report the connection (NOTIFY_STARTED) before this returns. */
    pthread_mutex_unlock(&g->mu);
    /* the light reads to their own pool (http.c), the head sorted while the gate has it */
    struct MHD_Daemon *d = srv_http_daemon_for(g->srv, g->tls ? NULL : &c->head);
    enum MHD_Result r =
        MHD_add_connection(d, c->fd, (const struct sockaddr *)&c->addr, c->addr_len);
    pthread_mutex_lock(&g->mu);
    if (r != MHD_YES) {
        /* libmicrohttpd closed the descriptor itself. */
        SRV_LOG(GD_LOG_WARN, NULL, "libmicrohttpd refused a connection: %s", strerror(errno));
        list_del(&g->served, c);
        g->by_fd[c->fd] = NULL;
        ip_release(g, c->ip);
        srv_head_fini(&c->head);
        free(c);
    }
}

static void head_data(struct srv_gate *g, struct srv_conn *c, uint32_t events);

/*
 * c's socket has something: look at its head again. A connection waiting for its head is
 * the gate's alone (libmicrohttpd does not know it yet), so it is read and parsed without
 * the lock, which is taken only to change the lists: the threads of libmicrohttpd, which
 * take it at each connection's start and end, never wait for a whole batch of heads.
 */
static void
on_head_data(struct srv_gate *g, struct srv_conn *c, uint32_t events)
{
    pthread_mutex_lock(&g->mu);
    head_data(g, c, events);
    pthread_mutex_unlock(&g->mu);
}

/* on_head_data's work; called with the lock held, it lets go of it while it reads. */
static void
head_data(struct srv_gate *g, struct srv_conn *c, uint32_t events)
{
    size_t max = (size_t)g->srv->cfg.max_header;
    pthread_mutex_unlock(&g->mu);
    ssize_t n = recv(c->fd, g->peek, max + 1, MSG_PEEK | MSG_DONTWAIT);
    int again = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    size_t end = n > 0 && !g->tls ? srv_head_end(g->peek, (size_t)n) : 0;
    struct srv_head head;
    struct gd_err err;
    int parsed = end > 0 && end <= max ? srv_head_parse(g->peek, end, &head, &err) : 1;
    pthread_mutex_lock(&g->mu);
    if (again) {
        if (parsed == 0)
            srv_head_fini(&head);
        return;
    }
    if (n <= 0) {
        conn_close(g, c, &g->waiting); /* the client left, or its connection broke */
        return;
    }
    c->peeked = (size_t)n;
    char what[160];
    describe(g->peek, (size_t)n, what, sizeof what);
    if (g->tls) {
        if ((unsigned char)g->peek[0] != 0x16) {
            /* Not a TLS handshake: most likely plain HTTP, which can read this answer. */
            refuse(g, c, SRV_EBADREQ, "this port serves HTTPS only: use an https:// URL", what);
            return;
        }
        atomic_store(&c->head_pending, 1);
        hand_over(g, c);
        return;
    }
    if (end == 0 || end > max) {
        if ((size_t)n > max) {
            int in_line = memchr(g->peek, '\n', max) == NULL;
            refuse(g, c, in_line ? SRV_EURI : SRV_EHEADERS,
                   in_line ? "the request line is longer than --max-header"
                           : "the request head is longer than --max-header",
                   what);
        } else if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
            conn_close(g, c, &g->waiting); /* a partial head and then nothing more */
        } else {
            /*
             * Wake up again only when more has arrived than is here now. Linux caps the
             * mark at half the receive buffer: a head that large would wake this loop at
             * once, again and again, so it is refused instead.
             */
            int lowat = (int)n + 1, set = 0;
            socklen_t len = sizeof set;
            setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
            if (getsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &set, &len) != 0 || set < lowat)
                refuse(g, c, SRV_EHEADERS,
                       "the request head is larger than this connection can hold", what);
        }
        return;
    }
    if (parsed != 0) {
        refuse(g, c, parsed, err.msg, what);
        return;
    }
    if (head.chunked) {
        srv_head_fini(&head);
        refuse(g, c, SRV_ELENGTH, "send a Content-Length (no chunked bodies)", what);
        return;
    }
    if (answer_health(g, c, &head))
        return;
    c->head = head;
    hand_over(g, c);
}

static void
on_linger_data(struct srv_gate *g, struct srv_conn *c)
{
    char sink[16384];
    for (;;) {
        ssize_t n = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n > 0) {
            c->lingered += (size_t)n;
            if (c->lingered < LINGER_BYTES)
                continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            return;
        }
        pthread_mutex_lock(&g->mu);
        conn_close(g, c, &g->lingering);
        pthread_mutex_unlock(&g->mu);
        return;
    }
}

static void accept_one(struct srv_gate *g, int fd, const struct sockaddr_storage *ssp,
                       socklen_t len);

/* Accepts what is waiting, the lock held for each connection's records only. */
static void
accept_all(struct srv_gate *g)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = accept4(g->listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            pthread_mutex_lock(&g->mu);
            accept_one(g, fd, &ss, len);
            pthread_mutex_unlock(&g->mu);
            continue;
        }
        if (errno == EMFILE || errno == ENFILE)
            SRV_LOG(GD_LOG_WARN, NULL, "accept: %s (raise the descriptor limit, ulimit -n)",
                    strerror(errno));
        else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
            SRV_LOG(GD_LOG_WARN, NULL, "accept: %s", strerror(errno));
        return;
    }
}

/* One connection accepted: the caps, then its record; the lock held. */
static void
accept_one(struct srv_gate *g, int fd, const struct sockaddr_storage *ssp, socklen_t len)
{
    const struct srv_config *cfg = &g->srv->cfg;
    struct sockaddr_storage ss = *ssp;
    if (fd >= g->table_size) {
        close(fd);
        srv_metrics_add(SRV_M_CONN_REFUSED_LIMIT, 1);
        return;
    }
    struct srv_conn *stale = g->by_fd[fd];
    if (stale != NULL) {
        /*
         * The descriptor is back, so libmicrohttpd closed it without reporting it (it
         * does so when a connection it took fails before it starts): forget the record.
         */
        list_del(&g->served, stale);
        g->by_fd[fd] = NULL;
        ip_release(g, stale->ip);
        srv_head_fini(&stale->head);
        free(stale);
    }
    int64_t open_now = g->waiting.n + g->lingering.n + g->served.n;
    unsigned char key[16];
    addr_key(&ss, key);
    struct ip_count **slot = ip_find(g, key);
    char who[64];
    if (open_now >= cfg->max_connections) {
        addr_text(&ss, len, who, sizeof who);
        send_error(g, fd, SRV_ECONNLIMIT, "the server is at its connection limit: retry", who);
        close(fd);
        srv_metrics_add(SRV_M_CONN_REFUSED_LIMIT, 1);
        return;
    }
    if (*slot != NULL && (*slot)->count >= cfg->max_connections_per_ip) {
        addr_text(&ss, len, who, sizeof who);
        send_error(g, fd, SRV_ECONNLIMIT,
                   "this address has as many connections open as it may: retry", who);
        close(fd);
        srv_metrics_add(SRV_M_CONN_REFUSED_PER_IP, 1);
        return;
    }
    struct srv_conn *c = calloc(1, sizeof *c);
    if (c == NULL) {
        close(fd);
        return;
    }
    if (*slot == NULL) {
        *slot = calloc(1, sizeof **slot);
        if (*slot == NULL) {
            free(c);
            close(fd);
            return;
        }
        memcpy((*slot)->addr, key, 16);
    }
    (*slot)->count++;
    c->gate = g;
    c->fd = fd;
    c->state = CONN_HEAD;
    c->addr = ss;
    c->addr_len = len;
    c->ip = *slot;
    c->t_accept = srv_clock();
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    if (epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        ip_release(g, c->ip);
        close(fd);
        free(c);
        return;
    }
    g->by_fd[fd] = c;
    list_add(&g->waiting, c);
}

/* Deadlines: heads that take too long, lingering that is over, bodies that crawl. */
static void
expire(struct srv_gate *g)
{
    const struct srv_config *cfg = &g->srv->cfg;
    double now = srv_clock();
    /* Waiting connections are in accept order, so the oldest are first. */
    while (g->waiting.head != NULL &&
           now - g->waiting.head->t_accept > (double)cfg->header_timeout) {
        struct srv_conn *c = g->waiting.head;
        char who[64], what[200];
        addr_text(&c->addr, c->addr_len, who, sizeof who);
        snprintf(what, sizeof what, "%s after %zu bytes of head", who, c->peeked);
        send_error(g, c->fd, SRV_ETIMEOUT, "the request head did not arrive in time", what);
        srv_metrics_add(SRV_M_TIMEOUT_HEAD, 1);
        conn_close(g, c, &g->waiting);
    }
    for (struct srv_conn *c = g->lingering.head, *next; c != NULL; c = next) {
        next = c->next;
        if (now > c->linger_until)
            conn_close(g, c, &g->lingering);
    }
    for (struct srv_conn *c = g->served.head; c != NULL; c = c->next) {
        if (!c->cut && atomic_load(&c->head_pending) &&
            now - c->t_accept > (double)cfg->header_timeout) {
            /* TLS: no 408 can be sent into a stream that libmicrohttpd encrypts. */
            char who[64];
            addr_text(&c->addr, c->addr_len, who, sizeof who);
            SRV_LOG(GD_LOG_INFO, NULL,
                    "%s: TLS handshake and request head not in after %lld s: connection closed",
                    who, (long long)cfg->header_timeout);
            shutdown(c->fd, SHUT_RDWR);
            c->cut = 1;
            srv_metrics_add(SRV_M_TIMEOUT_HEAD, 1);
        }
        if (c->cut || !atomic_load(&c->body_active))
            continue;
        uint64_t got = atomic_load(&c->body_received);
        /* A body has --body-timeout seconds, and one more for every --body-min-rate bytes. */
        double allowed = (double)cfg->body_timeout + (double)got / (double)cfg->body_min_rate;
        if (now - c->t_body <= allowed)
            continue;
        char who[64];
        addr_text(&c->addr, c->addr_len, who, sizeof who);
        SRV_LOG(GD_LOG_WARN, NULL,
                "%s: body too slow (%llu of %llu bytes in %.0f s): connection closed", who,
                (unsigned long long)got, (unsigned long long)atomic_load(&c->body_expected),
                now - c->t_body);
        shutdown(c->fd, SHUT_RDWR);
        c->cut = 1;
        srv_metrics_add(SRV_M_TIMEOUT_BODY, 1);
    }
}

/*
 * sec: after a burst of connections (as many clients that never read), glibc keeps what
 * they freed in its arenas; once most of them are gone the pages go back to the system
 * (issue 25 item 2: 400 such clients left 1.6 GB resident before).
 */
#define TRIM_PEAK 64

static void
trim_after_burst(struct srv_gate *g, int64_t *peak)
{
    int64_t open = g->waiting.n + g->lingering.n + g->served.n;
    if (open > *peak)
        *peak = open;
    if (*peak < TRIM_PEAK || open > *peak / 4)
        return;
    *peak = open;
    pthread_mutex_unlock(&g->mu);
    malloc_trim(0);
    pthread_mutex_lock(&g->mu);
}

static void *
gate_loop(void *arg)
{
    struct srv_gate *g = arg;
    struct epoll_event events[EVENTS];
    double last_expire = 0;
    int64_t peak = 0;
    while (!atomic_load(&g->stop)) {
        int n = epoll_wait(g->epoll_fd, events, EVENTS, TICK_MS);
        for (int i = 0; i < n; i++) {
            void *p = events[i].data.ptr;
            if (p == g) {
                accept_all(g);
                continue;
            }
            if (p == NULL)
                continue; /* the wake-up pipe */
            struct srv_conn *c = p;
            if (c->state == CONN_HEAD)
                on_head_data(g, c, events[i].events);
            else if (c->state == CONN_LINGER)
                on_linger_data(g, c);
        }
        double now = srv_clock();
        if (now - last_expire >= TICK_MS / 1000.0) {
            pthread_mutex_lock(&g->mu);
            expire(g);
            trim_after_burst(g, &peak);
            pthread_mutex_unlock(&g->mu);
            last_expire = now;
        }
    }
    return NULL;
}

/* ---- what libmicrohttpd reports ---- */

void
srv_gate_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                enum MHD_ConnectionNotificationCode code)
{
    struct srv_gate *g = cls;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info == NULL)
        return;
    int fd = info->connect_fd;
    pthread_mutex_lock(&g->mu);
    struct srv_conn *c = fd >= 0 && fd < g->table_size ? g->by_fd[fd] : NULL;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        if (c != NULL && c->state == CONN_HANDED) {
            c->state = CONN_SERVED;
            *socket_context = c;
        }
    } else if (c != NULL && *socket_context == c) {
        list_del(&g->served, c);
        g->by_fd[fd] = NULL;
        ip_release(g, c->ip);
        srv_head_fini(&c->head);
        free(c);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&g->mu);
}

struct srv_conn *
srv_gate_conn(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info != NULL ? info->socket_context : NULL;
}

void
srv_conn_take_head(struct srv_conn *c, struct srv_head *out)
{
    pthread_mutex_lock(&c->gate->mu);
    *out = c->head;
    memset(&c->head, 0, sizeof c->head);
    pthread_mutex_unlock(&c->gate->mu);
}

void
srv_conn_head_in(struct srv_conn *c)
{
    atomic_store(&c->head_pending, 0);
}

void
srv_conn_body_begin(struct srv_conn *c, uint64_t body)
{
    if (body == 0)
        return;
    c->t_body = srv_clock();
    atomic_store(&c->body_expected, body);
    atomic_store(&c->body_received, 0);
    atomic_store(&c->body_active, 1);
}

void
srv_conn_body_bytes(struct srv_conn *c, uint64_t n)
{
    atomic_fetch_add(&c->body_received, n);
}

void
srv_conn_body_done(struct srv_conn *c)
{
    atomic_store(&c->body_active, 0);
}

void
srv_gate_counts(struct srv_gate *g, int64_t *waiting, int64_t *served)
{
    pthread_mutex_lock(&g->mu);
    *waiting = g->waiting.n + g->lingering.n;
    *served = g->served.n;
    pthread_mutex_unlock(&g->mu);
}

/* ---- life ---- */

static int
bind_listen(const char *listen_addr, int *fd_out, int *port_out, struct gd_err *err)
{
    char host[256], port_text[16];
    int port;
    int rc = srv_listen_parse(listen_addr, host, sizeof host, &port, err);
    if (rc != 0)
        return rc;
    snprintf(port_text, sizeof port_text, "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(host, port_text, &hints, &res);
    if (gai != 0)
        return gd_err_set(err, GD_EINVAL, "--listen %s: %s", listen_addr, gai_strerror(gai));
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (res->ai_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    }
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
        int e = errno;
        freeaddrinfo(res);
        if (fd >= 0)
            close(fd);
        return gd_err_set(err, GD_EIO, "cannot serve on %s: %s", listen_addr, strerror(e));
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    *fd_out = fd;
    return 0;
}

int
srv_gate_open(struct srv_server *srv, struct srv_gate **out, struct gd_err *err)
{
    struct srv_gate *g = calloc(1, sizeof *g);
    if (g == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    g->srv = srv;
    g->tls = srv->tls != NULL;
    g->listen_fd = g->epoll_fd = -1;
    g->health_route = -1;
    g->wake_fd[0] = g->wake_fd[1] = -1;
    pthread_mutex_init(&g->mu, NULL);
    struct rlimit rl;
    int files = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                    ? (int)(rl.rlim_cur > 1 << 22 ? 1 << 22 : rl.rlim_cur)
                    : 1 << 16;
    g->table_size = files;
    g->by_fd = calloc((size_t)files, sizeof *g->by_fd);
    g->peek = malloc((size_t)srv->cfg.max_header + 1);
    int rc = 0;
    if (g->by_fd == NULL || g->peek == NULL)
        rc = gd_err_set(err, GD_ENOMEM, "out of memory");
    if (rc == 0)
        rc = bind_listen(srv->cfg.listen, &g->listen_fd, &srv->port, err);
    if (rc == 0 && ((g->epoll_fd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
                    pipe2(g->wake_fd, O_CLOEXEC | O_NONBLOCK) != 0))
        rc = gd_err_set(err, GD_EIO, "epoll: %s", strerror(errno));
    if (rc == 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = g};
        struct epoll_event wake = {.events = EPOLLIN, .data.ptr = NULL};
        if (epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, g->listen_fd, &ev) != 0 ||
            epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, g->wake_fd[0], &wake) != 0)
            rc = gd_err_set(err, GD_EIO, "epoll: %s", strerror(errno));
    }
    if (rc != 0) {
        srv_gate_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

int
srv_gate_start(struct srv_gate *g, struct gd_err *err)
{
    atomic_init(&g->stop, 0);
    if (pthread_create(&g->thread, NULL, gate_loop, g) != 0)
        return gd_err_set(err, GD_EIO, "cannot start the accepting thread");
    g->started = 1;
    return 0;
}

void
srv_gate_stop(struct srv_gate *g)
{
    if (g == NULL || !g->started)
        return;
    atomic_store(&g->stop, 1);
    if (write(g->wake_fd[1], "x", 1) < 0) {
        /* the loop wakes within TICK_MS anyway */
    }
    pthread_join(g->thread, NULL);
    g->started = 0;
    pthread_mutex_lock(&g->mu);
    while (g->waiting.head != NULL)
        conn_close(g, g->waiting.head, &g->waiting);
    while (g->lingering.head != NULL)
        conn_close(g, g->lingering.head, &g->lingering);
    pthread_mutex_unlock(&g->mu);
    close(g->listen_fd);
    g->listen_fd = -1;
}

void
srv_gate_free(struct srv_gate *g)
{
    if (g == NULL)
        return;
    srv_gate_stop(g);
    /* What libmicrohttpd took is closed by it; records it never reported are freed here. */
    while (g->served.head != NULL) {
        struct srv_conn *c = g->served.head;
        list_del(&g->served, c);
        srv_head_fini(&c->head);
        free(c);
    }
    for (int i = 0; i < IP_BUCKETS; i++)
        while (g->ips[i] != NULL) {
            struct ip_count *next = g->ips[i]->next;
            free(g->ips[i]);
            g->ips[i] = next;
        }
    if (g->listen_fd >= 0)
        close(g->listen_fd);
    if (g->epoll_fd >= 0)
        close(g->epoll_fd);
    for (int i = 0; i < 2; i++)
        if (g->wake_fd[i] >= 0)
            close(g->wake_fd[i]);
    pthread_mutex_destroy(&g->mu);
    free(g->by_fd);
    free(g->peek);
    free(g);
}
