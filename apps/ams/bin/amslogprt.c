/* amslogprt: prints what amslog wrote (standard input to standard output),
 * one message a line: subject name, content length, and the content quoted
 * if it is text ending in a NUL, else in hex. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    int nl;
    unsigned int cl;
    char name[33];
    static unsigned char buf[65536];
    while (fread(&nl, sizeof nl, 1, stdin) == 1) {
        if (nl < 0 || nl > 32 || fread(name, (size_t)nl, 1, stdin) != (nl ? 1u : 0u) ||
            fread(&cl, sizeof cl, 1, stdin) != 1 || cl > sizeof buf) {
            fprintf(stderr,
                    "amslogprt: not an amslog stream (a subject name of %d bytes "
                    "or content of %u)\n",
                    nl, cl);
            return 1;
        }
        name[nl] = 0;
        if (cl && fread(buf, cl, 1, stdin) != 1) {
            fprintf(stderr, "amslogprt: the stream ends inside a message\n");
            return 1;
        }
        if (!cl) {
            printf("%32s %10u\n", name, cl);
        } else if (buf[cl - 1] == 0) {
            printf("%32s %10u '%s'\n", name, cl, (char *)buf);
        } else {
            printf("%32s %10u ", name, cl);
            for (unsigned int i = 0; i < cl; i++)
                printf("%02x", buf[i]);
            printf("\n");
        }
    }
    return 0;
}
