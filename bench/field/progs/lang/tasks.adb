--  Ada: two tasks of CPU-bound work, a protected counter, the main waits for both.
with Ada.Text_IO; use Ada.Text_IO;
with Ada.Command_Line; use Ada.Command_Line;
procedure Tasks is
   Scale : constant Integer := (if Argument_Count > 0 then Integer'Value (Argument (1)) else 10);
   protected Total is
      procedure Add (N : Long_Long_Integer);
      function Get return Long_Long_Integer;
   private
      Sum : Long_Long_Integer := 0;
   end Total;
   protected body Total is
      procedure Add (N : Long_Long_Integer) is begin Sum := Sum + N; end Add;
      function Get return Long_Long_Integer is (Sum);
   end Total;
   function Collatz (Start : Long_Long_Integer) return Long_Long_Integer is
      N : Long_Long_Integer := Start; Steps : Long_Long_Integer := 0;
   begin
      while N /= 1 loop
         N := (if N mod 2 = 0 then N / 2 else 3 * N + 1);
         Steps := Steps + 1;
      end loop;
      return Steps;
   end Collatz;
   task type Worker (First : Integer);
   task body Worker is
      S : Long_Long_Integer := 0;
   begin
      for I in 0 .. Scale * 50_000 - 1 loop
         S := S + Collatz (Long_Long_Integer (First + 2 * I));
      end loop;
      Total.Add (S);
   end Worker;
begin
   declare
      A : Worker (1);
      B : Worker (2);
   begin
      null;
   end;
   Put_Line (Long_Long_Integer'Image (Total.Get));
end Tasks;
