# lib/plan: the pure plan (the --dist-bind value, the node and task plans,
# the device list), C API in db_core.h (included by the top Makefile).  Its
# objects go into the plugin (spank/build.mk) and dist-bind-check; the unit
# tests link the sanitized ones.

PLAN_SRC := $(wildcard lib/plan/*.cc)
FLAGS.lib/plan := -Ilib/common -Ilib/plan -I$(B)/include

PLAN_PIC    := $(call objs,pic,$(PLAN_SRC))
PLAN_SAN    := $(call objs,san,$(PLAN_SRC))
PLAN_SANPIC := $(call objs,sanpic,$(PLAN_SRC))
