# Writes OUT: the fatbin IN as a C array named NAME (bin2c's output), for runtime/generic_tier.cpp.
execute_process(COMMAND ${BIN2C} -c --name ${NAME} ${IN} OUTPUT_FILE ${OUT}.tmp
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bin2c failed on ${IN}: ${rc}")
endif()
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
