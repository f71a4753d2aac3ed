@include bench-head.sh@

echo "BENCH-BEGIN points=@POINTS@"
@LINES@
echo "BENCH-END points=@POINTS@"
