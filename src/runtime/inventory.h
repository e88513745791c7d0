/* Which third-party packages a language has in this sandbox. It exists for
 * the module_not_found hint: there is no network to install anything, so
 * naming what IS installed lets a model switch to an available library
 * instead of retrying an import that cannot work. */
#ifndef CORRAL_RUNTIME_INVENTORY_H
#define CORRAL_RUNTIME_INVENTORY_H

#include <stddef.h>

/* A malloc'd, comma separated list ("numpy, pandas, scipy, matplotlib, ...")
 * of the packages installed for language ("python" or "node"), scanning the
 * system's default directories. At most 40 names, then ", and N more".
 * Returns NULL with errno 0 for another language or when nothing is found,
 * and NULL with errno ENOMEM when memory runs out. */
char *cr_inventory_packages(const char *language);

/* The same over the given directories instead of the default ones, so tests
 * can build a tree of their own. For python each directory is a
 * dist-packages (or site-packages) directory, and each *.dist-info or
 * *.egg-info entry in it names one project ("numpy-1.24.2.dist-info" ->
 * "numpy"); names are deduplicated the way package indexes compare them and
 * sorted case-insensitively, with numpy, pandas, scipy and matplotlib first
 * when present. For node each directory is a node_modules-style directory
 * whose subdirectories are packages, scoped ones ("@scope/name") included;
 * names are deduplicated and sorted. Directories that cannot be read are
 * skipped. */
char *cr_inventory_from_dirs(const char *language, const char *const *dirs, size_t ndirs);

#endif
