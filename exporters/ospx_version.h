/* ospx_version.h — the name and version every output gives as its exporter: the build's
 * version (meson's project version, passed by exporters/meson.build), never a constant here. */
#ifndef OSPX_VERSION_H
#define OSPX_VERSION_H

#ifndef OSPREY_VERSION
#error "OSPREY_VERSION is defined by the build (exporters/meson.build)"
#endif
#define OSPX_EXPORTER_NAME "osprey " OSPREY_VERSION

#endif /* OSPX_VERSION_H */
