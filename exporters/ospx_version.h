/* ospx_version.h — the name and version every output gives as its exporter: the build's
 * version (common/ospc_version.h, from scripts/version.sh), never a constant here. */
#ifndef OSPX_VERSION_H
#define OSPX_VERSION_H

#include "ospc_version.h"
#define OSPX_EXPORTER_NAME "osprey " OSPREY_VERSION

#endif /* OSPX_VERSION_H */
