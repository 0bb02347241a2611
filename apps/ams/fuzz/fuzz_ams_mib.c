/* Both MIB loaders (XML and amsrc, chosen by content as ams_mib_load_text
 * does) on hostile text, then every lookup over what loaded. The input's
 * first byte picks the form: '<' is XML, anything else amsrc. */
#include <string.h>

#include "ams_mib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ams_mib *m = NULL;
    char err[256];
    if (ams_mib_load_text((const char *)data, size, "fuzz", &m, err, sizeof err))
        return 0;
    int n, k = 0;
    const ams_mib_venture *v = ams_mib_ventures(m, &n);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < v[i].n_roles; j++)
            k += ams_mib_role_named(&v[i], v[i].roles[j].name) == &v[i].roles[j];
        for (int j = 0; j < v[i].n_subjects; j++) {
            const ams_mib_subject *s = &v[i].subjects[j];
            k += ams_mib_subject_get(&v[i], s->nbr) == s;
            for (int r = 0; r < s->n_senders; r++)
                k += ams_mib_may_send(&v[i], s->nbr, s->senders[r]);
        }
        for (int j = 0; j < v[i].n_units; j++)
            k += ams_mib_unit_within(&v[i], v[i].units[j].nbr, 0);
        for (int j = 0; j < v[i].n_msgspaces; j++)
            k += ams_mib_msgspace_get(&v[i], v[i].msgspaces[j].continuum) != NULL;
        k += ams_mib_venture_find(m, v[i].app, v[i].auth) == &v[i];
    }
    const ams_mib_continuum *c = ams_mib_continua(m, &n);
    for (int i = 0; i < n; i++)
        k += ams_mib_continuum_named(m, c[i].name) != NULL;
    ams_mib_warnings(m, &n);
    ams_mib_free(m);
    return k < 0;
}
