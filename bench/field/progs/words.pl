# bench/field/progs/words.pl — perl: a regex tokenizer and a hash count over a file
my %count;
while (my $line = <>) {
    while ($line =~ /([A-Za-z]{3,})/g) { $count{lc $1}++; }
}
my @top = (sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count)[0..9];
print "$_ $count{$_}\n" for @top;
print scalar(keys %count), "\n";
