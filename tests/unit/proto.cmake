hv_unit_area(proto LIBS hv_proto)
