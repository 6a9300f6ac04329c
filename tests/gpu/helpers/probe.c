/*
 * Helper of the GPU test scripts (not a test by itself): bring up the
 * exchange from the environment, choose and set the device, and print
 *   DEVICE <ordinal> BUS <pci bus id>
 * or
 *   ERR <status> <message>
 */
#include <stdio.h>

#include "distbind.h"

int main(void) {
    distbind_t *db = NULL;
    distbind_status st = distbind_init(&db);
    if (st != DISTBIND_OK) {
        printf("ERR %s %s\n", distbind_status_name(st), distbind_last_error(NULL));
        return 1;
    }
    int dev = -1;
    char bus[64] = "";
    st = distbind_set_device(db, &dev);
    if (st == DISTBIND_OK) st = distbind_gpu_bus_id(db, bus, sizeof bus);
    if (st != DISTBIND_OK) {
        printf("ERR %s %s\n", distbind_status_name(st), distbind_last_error(db));
        distbind_destroy(db);
        return 1;
    }
    printf("DEVICE %d BUS %s\n", dev, bus);
    distbind_destroy(db);
    return 0;
}
