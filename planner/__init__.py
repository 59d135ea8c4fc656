"""SQL text → statements → Spark SQL."""

from sqlglot import exp
from sqlglot.dialects.spark import Spark

# sqlglot writes TIME as TIMESTAMP for Spark, which had no TIME type before 4.1;
# the engine enables Spark's TIME type, so a PostgreSQL time stays a time.
Spark.Generator.TYPE_MAPPING = {k: v for k, v in Spark.Generator.TYPE_MAPPING.items()
                                if k != exp.DataType.Type.TIME}
