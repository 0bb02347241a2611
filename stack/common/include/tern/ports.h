/* Published ports: daemons bind port 0 and record what they got in the file
 * "ports" of their node directory, one "<name> <proto> <port>" line per
 * socket, so that tests and tools never choose port numbers themselves and
 * parallel test networks never race for them.
 */
#ifndef TERN_PORTS_H
#define TERN_PORTS_H

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** File name of the published-ports file inside a node directory. */
#define TERN_PORTS_FILE "ports"

/**
 * Records that socket name (e.g. "ltp", "tcpcl") of protocol proto ("udp",
 * "tcp") is bound to port in dir/ports, replacing an earlier line of the same
 * name and proto. The file is replaced atomically (write + rename), so a reader
 * sees the old or the new file, never a torn one. Names and protos are single
 * words (-EINVAL otherwise).
 */
TERN_API int tern_ports_publish(const char *dir, const char *name, const char *proto,
                                unsigned port);

/**
 * Removes name/proto's line from dir/ports (a daemon stopping, or clearing
 * what a crashed one left); removes the file when no line is left. 0 also
 * when there was no such line or no file.
 */
TERN_API int tern_ports_withdraw(const char *dir, const char *name, const char *proto);

/** Looks up name/proto in dir/ports. TERN_ENOTFOUND if absent. */
TERN_API int tern_ports_lookup(const char *dir, const char *name, const char *proto,
                               unsigned *port);

#ifdef __cplusplus
}
#endif
#endif
